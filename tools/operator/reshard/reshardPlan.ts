import { RecordStatus, StoreRequestError, type IdempotencyRecord } from 'azure-functions-idempotency';
import { tableRecords } from 'azure-functions-idempotency/operator';
import { PAYMENTS_CONSUMER } from '../../../src/payments/PaymentsConsumer';
import { shardOf } from '../../../src/payments/shards';
import { PAYMENT_ACCEPTED_CONSUMER } from '../../../src/http/paymentsApi';
import { paymentStateIdsOf } from './movePaymentState';
import type { ShardTable } from './shardTables';

/** Keys listed by name in a plan's refusal at most (the count is always exact). */
export const MAX_KEYS_NAMED = 20;

/** What one shard's table holds of the payments consumer, read against the new layout. */
export interface ShardPlan {
  readonly shard: number;
  readonly label: string;
  /** Payment records read (markers of consumer `payments`; other consumers' rows are not read). */
  readonly records: number;
  /** Records the shard owns under the new count: they stay. */
  readonly stay: number;
  /** Records another shard owns under the new count, by that shard: they move there. */
  readonly moves: ReadonlyMap<number, number>;
  /** Records in progress (a charge may be going on): the migration refuses while there is one. */
  readonly inProgress: number;
  /** The webhook's Payment rows (`paymentstate`, keyed by paymentId): they move with their payment. */
  readonly paymentRows: Tally;
  /** The HTTP API's `accepted` markers (`http-payments-accepted`, keyed by paymentId): the owner's status reads them. */
  readonly acceptedMarkers: Tally;
}

/** Rows of one kind keyed by paymentId in a shard: how many, how many stay, how many move to which shard. */
export interface Tally {
  readonly count: number;
  readonly stay: number;
  readonly moves: ReadonlyMap<number, number>;
}

/** The plan of a change from `from` to `to` shards, and why it may not be applied yet. */
export interface ReshardPlan {
  readonly from: number;
  readonly to: number;
  readonly shards: readonly ShardPlan[];
  /** The first {@link MAX_KEYS_NAMED} keys in progress, with their shard. */
  readonly inProgressKeys: ReadonlyArray<{ readonly paymentId: string; readonly shard: number }>;
}

/**
 * Every payments record of `table`, page by page (one query per partition: `consumer eq 'payments'`, markers only:
 * the orders', rewards' and HTTP API's records in the same table are neither read nor touched). An empty page with a
 * continuation is followed (Azure answers so), only the absence of one ends a partition.
 */
export async function* paymentRecordsOf(table: ShardTable, pageSize = 500, consumer = PAYMENTS_CONSUMER): AsyncIterable<IdempotencyRecord> {
  const backend = tableRecords(table.client, { partitionCount: table.partitionCount });
  let cursor: string | undefined;
  do {
    const page = await backend.queryPage({ consumer }, cursor, pageSize);
    yield* page.records;
    cursor = page.cursor;
  } while (cursor !== undefined);
}

/**
 * Reads every listed table (old shards and new) and counts, per shard, the payment records that stay and those that
 * move, to which shard (`shardOf(paymentId, to)`), and those in progress. A table that does not exist yet (a new
 * shard) counts as empty. Nothing is written.
 * @throws the store's errors (a 403 names the role)
 */
export async function planReshard(tables: readonly ShardTable[], from: number, to: number): Promise<ReshardPlan> {
  const shards: ShardPlan[] = [];
  const inProgressKeys: Array<{ paymentId: string; shard: number }> = [];
  for (const table of tables) {
    let records = 0;
    let stay = 0;
    let inProgress = 0;
    const moves = new Map<number, number>();
    try {
      for await (const record of paymentRecordsOf(table)) {
        records++;
        if (record.status === RecordStatus.InProgress) {
          inProgress++;
          if (inProgressKeys.length < MAX_KEYS_NAMED) inProgressKeys.push({ paymentId: record.key, shard: table.shard });
        }
        const owner = shardOf(record.key, to);
        if (owner === table.shard) stay++;
        else moves.set(owner, (moves.get(owner) ?? 0) + 1);
      }
    } catch (error) {
      if (!isTableNotFound(error)) throw error;
    }
    const paymentRows = await tallyOf(paymentStateIdsOf(table), table.shard, to);
    const acceptedMarkers = await tallyOf(acceptedIdsOf(table), table.shard, to);
    shards.push({ shard: table.shard, label: table.label, records, stay, moves, inProgress, paymentRows, acceptedMarkers });
  }
  return { from, to, shards, inProgressKeys };
}

/** The paymentIds of `table`'s `accepted` markers (a table not created yet: none). */
export async function* acceptedIdsOf(table: ShardTable): AsyncIterable<string> {
  try {
    for await (const marker of paymentRecordsOf(table, 500, PAYMENT_ACCEPTED_CONSUMER)) yield marker.key;
  } catch (error) {
    if (!isTableNotFound(error)) throw error;
  }
}

async function tallyOf(ids: AsyncIterable<string>, shard: number, to: number): Promise<Tally> {
  let count = 0;
  let stay = 0;
  const moves = new Map<number, number>();
  for await (const id of ids) {
    count++;
    const owner = shardOf(id, to);
    if (owner === shard) stay++;
    else moves.set(owner, (moves.get(owner) ?? 0) + 1);
  }
  return { count, stay, moves };
}

const movingIn = (moves: ReadonlyMap<number, number>): number => [...moves.values()].reduce((a, b) => a + b, 0);

/** Payment rows and accepted markers that move across the plan. */
export function movingRowsOf(plan: ReshardPlan): number {
  return plan.shards.reduce((sum, shard) => sum + movingIn(shard.paymentRows.moves) + movingIn(shard.acceptedMarkers.moves), 0);
}

/** Records in progress across the plan. */
export function inProgressOf(plan: ReshardPlan): number {
  return plan.shards.reduce((sum, shard) => sum + shard.inProgress, 0);
}

/** Records that move across the plan. */
export function movingOf(plan: ReshardPlan): number {
  return plan.shards.reduce((sum, shard) => sum + [...shard.moves.values()].reduce((a, b) => a + b, 0), 0);
}

/** The plan as the operator reads it: one line per shard, the totals, and the refusal when one is in progress. */
export function planLines(plan: ReshardPlan): string[] {
  const lines = [`payments:reshard ${plan.from} -> ${plan.to} shards (payment records only; other consumers' rows are not read)`];
  for (const shard of plan.shards) {
    const moving = [...shard.moves.entries()].sort((a, b) => a[0] - b[0]);
    const moved = moving.reduce((sum, [, n]) => sum + n, 0);
    const to = moving.length > 0 ? ` (${moving.map(([target, n]) => `${n} to shard ${target}`).join(', ')})` : '';
    const role = shard.shard >= plan.from ? ' [new]' : shard.shard >= plan.to ? ' [retired]' : '';
    const busy = shard.inProgress > 0 ? `, ${shard.inProgress} in progress` : '';
    lines.push(`  shard ${shard.shard}${role} ${shard.label}: ${shard.records} payment records, ${shard.stay} stay, ${moved} move${to}${busy}`);
    lines.push(`    ${tallyText(shard.paymentRows, 'Payment rows (paymentstate)')}; ${tallyText(shard.acceptedMarkers, 'accepted markers')}`);
  }
  const total = plan.shards.reduce((sum, shard) => sum + shard.records, 0);
  lines.push(`  total: ${total} payment records, ${total - movingOf(plan)} stay, ${movingOf(plan)} move`);
  for (const [what, of] of [
    ['Payment rows (paymentstate)', (s: ShardPlan) => s.paymentRows],
    ['accepted markers', (s: ShardPlan) => s.acceptedMarkers],
  ] as const) {
    const count = plan.shards.reduce((sum, s) => sum + of(s).count, 0);
    const moving = plan.shards.reduce((sum, s) => sum + movingIn(of(s).moves), 0);
    lines.push(`  total: ${count} ${what}, ${count - moving} stay, ${moving} move`);
  }
  const busy = inProgressOf(plan);
  if (busy > 0) {
    const named = plan.inProgressKeys.map((k) => `${k.paymentId} (shard ${k.shard})`).join(', ');
    lines.push(
      `refused: ${busy} payment record(s) in progress: ${named}${busy > plan.inProgressKeys.length ? ', ...' : ''}. ` +
        'Drain first: stop the producers, let every shard queue empty and every charge run finish (npm run keys -- list --consumer payments --state in-progress), then plan again.',
    );
  }
  return lines;
}

function tallyText(tally: Tally, what: string): string {
  const moving = [...tally.moves.entries()].sort((a, b) => a[0] - b[0]);
  const to = moving.length > 0 ? ` (${moving.map(([target, n]) => `${n} to shard ${target}`).join(', ')})` : '';
  return `${tally.count} ${what}, ${tally.stay} stay, ${movingIn(tally.moves)} move${to}`;
}

/** A 404 TableNotFound (a new shard's table not created yet). */
export function isTableNotFound(error: unknown): boolean {
  return error instanceof StoreRequestError && error.statusCode === 404 && /TableNotFound/.test(error.message);
}
