import { ConfigurationError } from 'azure-functions-idempotency';

/**
 * `PAYMENT_SHARD_TABLE_ENDPOINTS` (issue 52 item 2, docs/DESIGN.md "Past one task hub"): the table service endpoint of
 * every shard's storage account, in shard order, comma-separated
 * (`https://st<token>.table.core.windows.net/,https://st<token>s1.table.core.windows.net/,...`). Checked at start with
 * the other settings (src/config/settings.ts); what the app does with it: src/payments/shardTables.ts.
 */

/** Hosts a plain-http endpoint may name: the local emulator on this machine (Azurite). */
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * What is wrong with `value` as the map of `count` shards, or undefined when it is right (or unset: no map). Each entry
 * is an absolute https URL, or http on a loopback host (Azurite); no query (a SAS would be a secret in an app setting:
 * the identity reaches the tables) and no user info; N entries, all different.
 */
export function shardTableEndpointsProblem(value: string | undefined, count: number): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length !== count) return `${entries.length} table endpoints for ${count} shards (PAYMENT_SHARD_COUNT): one per shard, in shard order`;
  for (const [shard, entry] of entries.entries()) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      return `shard ${shard}'s entry ${JSON.stringify(entry)} is not an absolute URL`;
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)))
      return `shard ${shard}'s entry ${entry} must be https (plain http only on a loopback host: the local emulator)`;
    if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '')
      return `shard ${shard}'s entry ${url.origin}${url.pathname} must carry no query, fragment or credentials (the identity reaches the tables)`;
  }
  const normalized = entries.map((entry) => entry.replace(/\/+$/, '').toLowerCase());
  if (new Set(normalized).size !== normalized.length) return 'two shards name the same table endpoint: each shard has its own storage account';
  return undefined;
}

/**
 * The map as a list (index = shard), or undefined when the setting is unset.
 * @throws ConfigurationError when {@link shardTableEndpointsProblem} finds a problem
 */
export function shardTableEndpointsOf(value: string | undefined, count: number): readonly string[] | undefined {
  const problem = shardTableEndpointsProblem(value, count);
  if (problem) throw new ConfigurationError(`PAYMENT_SHARD_TABLE_ENDPOINTS: ${problem}`);
  if (value === undefined || value.trim() === '') return undefined;
  return value.split(',').map((entry) => entry.trim());
}
