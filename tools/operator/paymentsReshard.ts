import { keyFromMessageId } from 'azure-functions-idempotency';
import { loadSettings } from '../../src/config/settings';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import { MAX_SHARDS, shardOf } from '../../src/payments/shards';
import { optionReader, parseCommandLine, runTool } from '../cli/commandLine';
import { moveRecord, ReshardConflictError, ReshardRecordBusyError, type MoveHooks, type MoveOutcome } from './reshard/moveRecord';
import { PAYMENT_ACCEPTED_CONSUMER } from '../../src/http/paymentsApi';
import { movePaymentStateRow, paymentStateIdsOf } from './reshard/movePaymentState';
import { acceptedIdsOf, inProgressOf, isTableNotFound, movingOf, movingRowsOf, paymentRecordsOf, planLines, planReshard } from './reshard/reshardPlan';
import { readShardTables, type ShardTable } from './reshard/shardTables';

export const USAGE = `Changes the payments shard count N: moves every payment record whose key another shard owns under the new N
to that shard's table (docs/deploy.md section 11, "Changing N"). Drain first: no producer sending, every shard queue
empty, no record in progress.

  npm run payments:reshard -- --tables <file.json> --from <N> --to <N> [--plan | --apply]

  --tables  every shard's idempotency table, shards 0 to max(from, to) - 1, each once:
            { "tables": [ { "shard": 0, "endpoint": "https://stpay0.table.core.windows.net" },
                          { "shard": 1, "connection": "<connection string>" } ] }
            optional per shard: "tableName" (default IDEMPOTENCY_TABLE_NAME), "partitionCount" (default
            IDEMPOTENCY_PARTITION_COUNT), "paymentStateTableName" (the webhook's Payment rows in the same account,
            default PAYMENT_STATE_TABLE_NAME). An endpoint is reached with your Azure identity (Storage Table Data
            Contributor on each account; AZURE_CLIENT_ID as the app reads it)
  --from    the shard count the apps run with now (PAYMENT_SHARD_COUNT)
  --to      the new shard count, 1 to ${MAX_SHARDS}
  --plan    (default) read only: per shard, payment records that stay and that move, to which shard, and likewise the
            webhook's Payment rows (paymentstate) and the API's accepted markers; refused (exit 1, naming the keys)
            while a record is in progress
  --apply   the plan, then each moving record and its rows (the consumer's Payment row), each moving accepted marker
            and each moving webhook Payment row are copied to the new shard insert-if-absent and deleted from the old
            one conditionally (ETag). A different one already there is a conflict: the run stops and names it, nothing
            is overwritten. Re-run after any interruption: it finishes

It reads the app's settings (IDEMPOTENCY_TABLE_NAME, IDEMPOTENCY_PARTITION_COUNT, AZURE_CLIENT_ID, the store timeout)
and a payment's rows only (consumer "payments", the API's "http-payments-accepted" markers, the paymentstate table): the
orders', rewards', webhook event ids' and Idempotency-Key records are neither read nor moved (they stay with the app
that reads them). Stop the webhook's deliveries during the apply (docs/deploy.md section 11).
It does not read the queues: check each is empty (Azure portal, or az servicebus queue show --query countDetails).
Exit 0 planned or done, 1 refused or stopped (conflict, a record in progress or written meanwhile), 2 usage.`;

/** What a test adds: the hooks of each move (a crash between copy and delete). */
export type ReshardOptions = MoveHooks;

/**
 * The command: parses `argv`, reads the settings from `env` and the tables file, plans, and with `--apply` moves.
 * Returns the exit code.
 */
export async function runPaymentsReshard(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  print: (line: string) => void = console.log,
  options: ReshardOptions = {},
): Promise<number> {
  const values = parseCommandLine(argv, {
    tables: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    plan: { type: 'boolean' },
    apply: { type: 'boolean' },
  });
  if (values === 'help') {
    print(USAGE);
    return 0;
  }
  const read = optionReader(values);
  const from = read.integer('from', { min: 1, max: MAX_SHARDS, default: 0 });
  const to = read.integer('to', { min: 1, max: MAX_SHARDS, default: 0 });
  const file = read.optional('tables');
  if (values.from === undefined) read.problem('--from is required (the shard count the apps run with now)');
  if (values.to === undefined) read.problem('--to is required (the new shard count)');
  if (file === undefined) read.problem('--tables is required (a JSON file naming every shard table)');
  if (read.flag('plan') && read.flag('apply')) read.problem('--plan and --apply exclude each other');
  read.done();
  const settings = loadSettings(env);
  const tables = readShardTables(file!, Math.max(from, to), settings);
  const plan = await planReshard(tables, from, to);
  for (const line of planLines(plan)) print(line);
  if (inProgressOf(plan) > 0) return 1;
  if (!read.flag('apply')) {
    print(
      movingOf(plan) + movingRowsOf(plan) === 0
        ? 'nothing moves: every payment record is on its shard under the new count'
        : 'dry run: nothing was written (--apply moves them)',
    );
    return 0;
  }
  return applyReshard(tables, to, print, options);
}

/** Moves every payment record to its owner under `to`, table after table. Returns the exit code. */
async function applyReshard(tables: readonly ShardTable[], to: number, print: (line: string) => void, options: ReshardOptions): Promise<number> {
  const counts = { records: newCounts(), markers: newCounts(), rows: newCounts() };
  const created = new Set<string>();
  const ensure = async (target: ShardTable, which: 'client' | 'paymentState') => {
    if (created.has(`${target.shard}/${which}`)) return;
    await target[which].createTable(); // a new shard's table: created once (an existing one is left as it is)
    created.add(`${target.shard}/${which}`);
  };
  try {
    for (const table of tables) {
      // Each listing is read whole before writing: a delete behind a page's cursor could shift what the next page holds.
      const records = await movingIds(mapKeys(paymentRecordsOf(table)), table.shard, to);
      const markers = await movingIds(acceptedIdsOf(table), table.shard, to);
      const rows = await movingIds(paymentStateIdsOf(table), table.shard, to);
      for (const paymentId of records) {
        const target = tables[shardOf(paymentId, to)];
        await ensure(target, 'client');
        counts.records[await moveRecord(keyFromMessageId(PAYMENTS_CONSUMER, paymentId), table, target, options)]++;
      }
      for (const paymentId of markers) {
        const target = tables[shardOf(paymentId, to)];
        await ensure(target, 'client');
        counts.markers[await moveRecord({ consumer: PAYMENT_ACCEPTED_CONSUMER, key: paymentId }, table, target, options)]++;
      }
      for (const paymentId of rows) {
        const target = tables[shardOf(paymentId, to)];
        await ensure(target, 'paymentState');
        counts.rows[await movePaymentStateRow(paymentId, table, target, options)]++;
      }
      if (records.length + markers.length + rows.length > 0)
        print(`  shard ${table.shard}: ${records.length} payment record(s), ${markers.length} accepted marker(s), ${rows.length} Payment row(s) moved`);
    }
  } catch (error) {
    if (error instanceof ReshardConflictError || error instanceof ReshardRecordBusyError) {
      print(error.message);
      print(`stopped: ${summary(counts)}; run again once it is settled (what moved stays moved)`);
      return 1;
    }
    throw error;
  }
  print(`applied: ${summary(counts)}. Now set PAYMENT_SHARD_COUNT=${to} on every shard app (and deploy the new ones), then plan again: 0 move`);
  return 0;
}

type Counts = Record<MoveOutcome, number>;
const newCounts = (): Counts => ({ copied: 0, alreadyThere: 0, gone: 0 });

/** The ids of `ids` another shard owns under `to`, read whole (a listing of a table not created yet: none). */
async function movingIds(ids: AsyncIterable<string>, shard: number, to: number): Promise<string[]> {
  const moving: string[] = [];
  try {
    for await (const id of ids) if (shardOf(id, to) !== shard) moving.push(id);
  } catch (error) {
    if (!isTableNotFound(error)) throw error;
  }
  return moving;
}

async function* mapKeys(records: AsyncIterable<{ key: string }>): AsyncIterable<string> {
  for await (const record of records) yield record.key;
}

function summary({ records, markers, rows }: { records: Counts; markers: Counts; rows: Counts }): string {
  const of = (c: Counts) =>
    `${c.copied} copied and deleted from the old shard, ${c.alreadyThere} found already copied (deleted from the old shard), ${c.gone} gone meanwhile`;
  return `${of(records)}; accepted markers: ${of(markers)}; webhook Payment rows: ${of(rows)}`;
}

if (require.main === module) runTool('npm run payments:reshard', () => runPaymentsReshard(process.argv.slice(2), process.env));
