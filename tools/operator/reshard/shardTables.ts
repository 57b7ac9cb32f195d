import { readFileSync } from 'node:fs';
import type { TableClient } from '@azure/data-tables';
import { validatePartitionCount } from 'azure-functions-idempotency/internal';
import { MAX_SHARDS } from '../../../src/payments/shards';
import { createTableClient } from '../../../src/app/tableClient';
import type { Settings } from '../../../src/config/settings';
import { UsageError } from '../../cli/commandLine';

/** One shard's idempotency table, as the migration reaches it. */
export interface ShardTable {
  readonly shard: number;
  readonly client: TableClient;
  /** The webhook's Payment rows in the same account (`PAYMENT_STATE_TABLE_NAME`: PartitionKey = paymentId, RowKey `payment`). */
  readonly paymentState: TableClient;
  /** The table's partition count (`IDEMPOTENCY_PARTITION_COUNT` of that shard's app). */
  readonly partitionCount: number;
  /** What the operator reads in the output: the account's endpoint (never a key) and the table's name. */
  readonly label: string;
}

/** One entry of the tables file: shard i's table, by connection string (local) or endpoint (Azure, your identity). */
interface TableEntry {
  readonly shard: number;
  readonly connection?: string;
  readonly endpoint?: string;
  readonly tableName?: string;
  readonly paymentStateTableName?: string;
  readonly partitionCount?: number;
}

/**
 * The tables file of `npm run payments:reshard -- --tables <file>`: every shard's idempotency table, old and new
 * layout alike (shard i is the same Function App, storage account and table in both; growing adds shards, shrinking
 * retires the highest ones), so shards 0 to max(from, to) - 1 are each listed once:
 *
 *     { "tables": [ { "shard": 0, "endpoint": "https://stpay0.table.core.windows.net" },
 *                   { "shard": 1, "connection": "UseDevelopmentStorage=true", "tableName": "idempotency" } ] }
 *
 * `connection` (a connection string: local Azurite) or `endpoint` (Azure: your identity, `Storage Table Data
 * Contributor`; `AZURE_CLIENT_ID` as the app reads it), `tableName` (default `IDEMPOTENCY_TABLE_NAME`),
 * `partitionCount` (default `IDEMPOTENCY_PARTITION_COUNT`), `paymentStateTableName` (the webhook's Payment rows in the same
 * account, default `PAYMENT_STATE_TABLE_NAME`).
 * @throws UsageError naming what is wrong (unreadable file, a shard missing or twice, both or neither of connection and endpoint)
 */
export function shardTablesOf(text: string, shardsNeeded: number, settings: Settings): ShardTable[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--tables: not JSON (${(error as Error).message})`);
  }
  const entries = (parsed as { tables?: unknown } | null)?.tables;
  if (!Array.isArray(entries)) throw new UsageError('--tables: the file must be { "tables": [ { "shard": 0, "connection" | "endpoint": ... }, ... ] }');
  const byShard = new Map<number, ShardTable>();
  for (const raw of entries as TableEntry[]) {
    const shard = raw?.shard;
    if (!Number.isInteger(shard) || shard < 0 || shard >= MAX_SHARDS)
      throw new UsageError(`--tables: "shard" must be an integer from 0 to ${MAX_SHARDS - 1}, got ${JSON.stringify(shard)}`);
    if (byShard.has(shard)) throw new UsageError(`--tables: shard ${shard} is listed twice`);
    if ((raw.connection === undefined) === (raw.endpoint === undefined))
      throw new UsageError(`--tables: shard ${shard} needs one of "connection" (a connection string) or "endpoint" (https://<account>.table.core.windows.net)`);
    const tableName = raw.tableName ?? settings.IDEMPOTENCY_TABLE_NAME;
    let partitionCount: number;
    try {
      partitionCount = validatePartitionCount(raw.partitionCount ?? settings.IDEMPOTENCY_PARTITION_COUNT);
    } catch (error) {
      throw new UsageError(`--tables: shard ${shard}: ${(error as Error).message}`);
    }
    const reach = {
      IDEMPOTENCY_TABLE_NAME: tableName,
      IDEMPOTENCY_TABLE_CONNECTION_STRING: raw.connection,
      IDEMPOTENCY_TABLE_ENDPOINT: raw.endpoint,
      AZURE_CLIENT_ID: settings.AZURE_CLIENT_ID,
      IDEMPOTENCY_STORE_TIMEOUT_MS: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
    };
    const client = createTableClient(reach, {}, tableName);
    const paymentState = createTableClient(reach, {}, raw.paymentStateTableName ?? settings.PAYMENT_STATE_TABLE_NAME);
    byShard.set(shard, { shard, client, paymentState, partitionCount, label: `${new URL(client.url).origin}/${tableName}` });
  }
  const missing = Array.from({ length: shardsNeeded }, (_, i) => i).filter((i) => !byShard.has(i));
  if (missing.length > 0) throw new UsageError(`--tables: shards 0 to ${shardsNeeded - 1} must each be listed; missing ${missing.join(', ')}`);
  const extra = [...byShard.keys()].filter((i) => i >= shardsNeeded);
  if (extra.length > 0) throw new UsageError(`--tables: shard ${extra.join(', ')} is in neither layout (0 to ${shardsNeeded - 1})`);
  return [...byShard.values()].sort((a, b) => a.shard - b.shard);
}

/** The tables file read from `path`. @throws UsageError when it cannot be read */
export function readShardTables(path: string, shardsNeeded: number, settings: Settings): ShardTable[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`--tables: cannot read ${path} (${(error as Error).message})`);
  }
  return shardTablesOf(text, shardsNeeded, settings);
}
