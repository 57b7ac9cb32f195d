import { ConfigurationError } from 'azure-functions-idempotency';
import { shardTableConnection } from '../../src/app/shardStores';
import { PAYMENT_ACCEPTED_CONSUMER } from '../../src/http/paymentsApi';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import { MAX_SHARDS, shardOf } from '../../src/payments/shards';
import { shardTableEndpointsOf } from '../../src/payments/shardTables';

type Env = Readonly<Record<string, string | undefined>>;

/** The consumers whose key is a payment id: their records live in the payment's owner shard. */
export const PAYMENT_KEYED_CONSUMERS: ReadonlySet<string> = new Set([PAYMENTS_CONSUMER, PAYMENT_ACCEPTED_CONSUMER]);

/** Options of the package's console that take no value (every other `--option` takes the next argument). */
const FLAGS: ReadonlySet<string> = new Set(['--json', '--dry-run', '--help', '-h', '--force']);

/** Where the console goes on a sharded deployment: the environment pointed at shard `shard`'s table, with a note for stderr. */
export type ShardChoice =
  | { readonly kind: 'unsharded' }
  | { readonly kind: 'shard'; readonly shard: number; readonly remote: boolean; readonly env: Env; readonly note: string }
  | { readonly kind: 'refused'; readonly message: string };

/**
 * Which shard's table `npm run keys` reads, from the app's settings in `env` (`PAYMENT_SHARD_COUNT`, `_INDEX`,
 * `PAYMENTS_QUEUE_NAME`, `PAYMENT_SHARD_TABLE_ENDPOINTS`):
 * - `shardOption` (`--shard <i>`) when given;
 * - else the owner of the key for `keys show|release|evict <consumer> <paymentId>` of a payment-keyed consumer
 *   (`payments`, `http-payments-accepted`), and the shard of the queue for `dlq replay <base>-<i>`;
 * - else the settings' own shard (`keys list`, the HTTP API's and the webhook's records: they stay where received).
 * Another shard is reached through the map (locally: the settings' connection string with its TableEndpoint replaced);
 * without the map, or when the table is named on the command line, a command for another shard is refused.
 */
export function shardChoiceOf(args: readonly string[], env: Env, shardOption: string | undefined): ShardChoice {
  const count = Number(env.PAYMENT_SHARD_COUNT ?? '1');
  const index = Number(env.PAYMENT_SHARD_INDEX ?? '0');
  if (!Number.isInteger(count) || count < 1 || count > MAX_SHARDS || !Number.isInteger(index) || index < 0 || index >= count)
    return { kind: 'refused', message: `PAYMENT_SHARD_COUNT ${env.PAYMENT_SHARD_COUNT} / PAYMENT_SHARD_INDEX ${env.PAYMENT_SHARD_INDEX} name no shard` };
  if (count === 1 && shardOption === undefined) return { kind: 'unsharded' };
  let shard = index;
  let why = `the settings' own shard (PAYMENT_SHARD_INDEX); --shard <i> for another`;
  if (shardOption !== undefined) {
    shard = Number(shardOption);
    if (!/^\d+$/.test(shardOption) || shard >= count) return { kind: 'refused', message: `--shard ${shardOption}: a shard of ${count} is 0 to ${count - 1}` };
    why = '--shard';
  } else {
    const [group, command, first, second] = positionalsOf(args);
    if (group === 'keys' && ['show', 'release', 'evict'].includes(command) && PAYMENT_KEYED_CONSUMERS.has(first) && second !== undefined) {
      shard = shardOf(second, count);
      why = `the owner of payment ${second}`;
    } else if (group === 'dlq' && command === 'replay' && first !== undefined && env.PAYMENTS_QUEUE_NAME?.endsWith(`-${index}`)) {
      const base = env.PAYMENTS_QUEUE_NAME.slice(0, -`-${index}`.length);
      const match = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d+)$`).exec(first);
      if (match && Number(match[1]) < count) {
        shard = Number(match[1]);
        why = `the shard of queue ${first}`;
      }
    }
  }
  const note = `shard ${shard} of ${count}: ${why}`;
  if (shard === index) return { kind: 'shard', shard, remote: false, env, note };
  if (args.some((arg) => /^--table-(connection-string|endpoint)(=|$)/.test(arg)))
    return { kind: 'refused', message: `${note}, but the table is named on the command line: run it with shard ${shard}'s table and without --shard` };
  try {
    const endpoints = shardTableEndpointsOf(env.PAYMENT_SHARD_TABLE_ENDPOINTS, count);
    if (!endpoints)
      return {
        kind: 'refused',
        message: `${note}; these settings are shard ${index}'s and have no PAYMENT_SHARD_TABLE_ENDPOINTS: use shard ${shard}'s settings`,
      };
    const connection = shardTableConnection(env.IDEMPOTENCY_TABLE_CONNECTION_STRING, endpoints[shard]);
    const pointed =
      'connectionString' in connection
        ? { ...env, IDEMPOTENCY_TABLE_CONNECTION_STRING: connection.connectionString }
        : { ...env, IDEMPOTENCY_TABLE_CONNECTION_STRING: undefined, IDEMPOTENCY_TABLE_ENDPOINT: connection.endpoint };
    return { kind: 'shard', shard, remote: true, env: pointed, note: `${note}, its table at ${endpoints[shard]}` };
  } catch (error) {
    if (error instanceof ConfigurationError) return { kind: 'refused', message: error.message };
    throw error;
  }
}

/** The console's positional arguments (command words and their operands), skipping options and their values. */
export function positionalsOf(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--') return [...out, ...args.slice(i + 1)];
    if (arg.startsWith('-')) {
      if (!FLAGS.has(arg) && !arg.includes('=')) i++;
    } else out.push(arg);
  }
  return out;
}
