import { keyFromMessageId, payloadDigest, RecordStatus } from 'azure-functions-idempotency/internal';
import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';
import type { Ledger } from './ledger';
import type { ChargeResult } from '../../src/payments/schema';
import type { PaymentsRig } from '../local/paymentsRig';
import type { LogicalMessage } from './paymentsWorkload';
import type { FinalResults } from './paymentsHandOff';
import { runConcurrent } from '../bench/runConcurrent';

export const PART = 'payments';

/** How a charge orchestration fails by design: the provider's transient failures outlasted the retries, or its attempt was stale. */
const EXPECTED_CHARGE_FAILURE = /payment provider|is stale: attempt/;

type Amounted = { amount: number };
export const amountOf = (m: LogicalMessage) => (m.body as Amounted).amount;

/** `#12 charge pay-7`: a logical message in a violation. */
export const label = (m: LogicalMessage) => `#${m.index} ${m.kind} ${m.messageId ?? '(no MessageId)'}`;

/** The completed records of the run's payment ids, into `into` (paymentId -> digest and result). */
export async function readResults(rig: PaymentsRig, messages: readonly LogicalMessage[], into: FinalResults): Promise<void> {
  const ids = [...new Set(messages.filter((m) => m.kind !== 'malformed' && m.messageId !== undefined).map((m) => String(m.messageId)))];
  await forEachLimit(ids, 16, async (id) => {
    const record = await rig.store.get(keyFromMessageId(PART, id));
    if (record?.status === RecordStatus.Completed) into.set(id, { digest: record.digest, result: record.result as ChargeResult });
  });
}

/** RowKeys of local rows (`<marker>~<name>`) of the idempotency table whose marker does not exist. */
async function findOrphanLocalRows(rig: PaymentsRig): Promise<string[]> {
  const rowKeys = new Set<string>();
  for await (const e of rig.store.client.listEntities<Record<string, unknown>>({ queryOptions: { select: ['PartitionKey', 'RowKey'] } })) {
    rowKeys.add(`${e.partitionKey}/${e.rowKey}`);
  }
  return [...rowKeys].filter((k) => k.includes('~') && !rowKeys.has(k.slice(0, k.indexOf('~'))));
}

/** `fn` on every item, at most `limit` at once. */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  await runConcurrent(items.length, limit, (i) => fn(items[i]));
}

/** What the stores hold after the run, for {@link checkStoredState}. */
export interface StoredState {
  readonly parkedByReason: Record<string, number>;
  readonly leftInProgress: number;
  readonly orphanLocalRows: number;
  readonly unfinished: number;
}

/**
 * The stores after the run, checked into `violations`: every malformed message parked with its reason and every
 * reused key with `key-reused`; no record left in progress unless a message of it sits in the DLQ; each completed
 * record's Payment row is its own payload's; no local row without its marker; every charge orchestration ended,
 * failing only as designed. `candidates` are the run's valid and reused-key messages.
 */
export async function checkStoredState(
  rig: PaymentsRig,
  messages: readonly LogicalMessage[],
  ledger: Pick<Ledger, 'fate'>,
  candidates: readonly LogicalMessage[],
  withoutOutcome: readonly string[],
  violations: string[],
): Promise<StoredState> {
  // Parking: every malformed message with its reason, every reused key answered keyReused with key-reused.
  const parked = await rig.parking.list(PART);
  const parkedByReason: Record<string, number> = {};
  for (const p of parked) parkedByReason[p.reason] = (parkedByReason[p.reason] ?? 0) + 1;
  for (const m of messages.filter((x) => x.kind === 'malformed' || x.kind === 'reusedKey' || x.kind === 'reusedAfterExpiry')) {
    const fate = ledger.fate(PART, m.index);
    if (fate.copiesSent === 0 || (fate.completions.length === 0 && fate.deadLettered.length > 0)) continue;
    if (m.kind !== 'malformed' && !(fate.completions as PaymentDeliveryResult[]).some((r) => r.outcome === 'keyReused')) continue;
    const reason = m.expectedParkReason ?? 'key-reused';
    const body = Buffer.from(typeof m.body === 'string' ? m.body : JSON.stringify(m.body));
    const found = parked.some((p) => p.reason === reason && p.body.equals(body) && (m.messageId === undefined || p.messageId === m.messageId));
    if (!found) violations.push(`${label(m)} is not parked with reason ${reason}`);
  }

  // Nothing left in progress: every key's record is completed or gone (swept), unless a message of it sits in the DLQ.
  const inDlq = new Set(messages.filter((m) => ledger.fate(PART, m.index).deadLettered.length > 0).map((m) => m.messageId));
  const leftInProgress: string[] = [];
  const rowMismatches: string[] = [];
  const ids = [...new Set(candidates.map((m) => m.messageId!))];
  await forEachLimit(ids, 16, async (id) => {
    const key = keyFromMessageId(PART, id);
    const record = await rig.store.get(key);
    if (record && record.status !== RecordStatus.Completed && !inDlq.has(id)) leftInProgress.push(`${id} (${record.status}, attempt ${record.attempt})`);
    if (!record || record.status !== RecordStatus.Completed) return;
    const result = record.result as ChargeResult | undefined;
    // Every completed payment is charged (or declined, rejected) or failed with its reason, on record and row alike.
    if (result?.status === 'failed' && !result.reason?.trim()) rowMismatches.push(`${id}: failed without a reason`);
    // After the sweep the Payment row is that of the record's own payload (never a swept lifetime's).
    const m = candidates.find((x) => x.messageId === id && payloadDigest(x.body) === record.digest);
    if (!m) {
      rowMismatches.push(`${id}: its record's digest is none of the run's payloads for it`);
      return;
    }
    const address = rig.store.addressOf(key);
    const row = await rig.store.client.getEntity<Record<string, unknown>>(address.partitionKey, `${address.rowKey}~payment`).catch(() => undefined);
    if (!row || row.amount !== amountOf(m) || row.state !== result?.status || (result?.status === 'failed' && row.reason !== result.reason))
      rowMismatches.push(
        `${id}: Payment row ${row ? `amount ${String(row.amount)}, state ${String(row.state)}` : 'missing'}; expected amount ${amountOf(m)}, state ${result?.status}`,
      );
  });
  for (const x of leftInProgress.slice(0, 10)) violations.push(`${x} is left in progress with no message of it in the DLQ`);
  for (const x of withoutOutcome.slice(0, 5)) {
    const id = x.split(' ').at(-1)!;
    const record = await rig.store.get(keyFromMessageId(PART, id));
    violations.push(
      `${x} was acknowledged with its charge handed off; its record now: ${record ? `${record.status}, attempt ${record.attempt}, result ${JSON.stringify(record.result ?? null)}` : 'none (swept?)'}`,
    );
  }
  // Local rows live and die with their marker: after the sweep, no Payment row is left without one.
  const orphanLocalRows = await findOrphanLocalRows(rig);
  if (orphanLocalRows.length > 0)
    violations.push(
      `${orphanLocalRows.length} local row(s) without their marker (not deleted with it by the sweep): ${orphanLocalRows.slice(0, 5).join(', ')}`,
    );
  for (const x of rowMismatches.slice(0, 10)) violations.push(x);
  // Every charge orchestration ends: after the drain none is pending or running. One that cannot finish
  // (e.g. an orchestrator that is not deterministic on replay) would otherwise only show as slow deliveries.
  const unfinished = rig.backend ? await rig.backend.store.unfinishedInstances() : [];
  if (unfinished.length > 0) violations.push(`${unfinished.length} charge orchestration(s) never finished: ${unfinished.slice(0, 5).join(', ')}`);
  // A charge orchestration may fail only as designed (the provider's retries spent, a stale attempt);
  // any other failure (the engine's non-determinism check, a missing function, a bug) is a broken charge, even when
  // a later run or an operator's resubmission completed the payment.
  const failed = rig.backend && 'failedInstances' in rig.backend.store ? await rig.backend.store.failedInstances() : [];
  const unexpected = failed.filter((f) => !EXPECTED_CHARGE_FAILURE.test(f.output));
  if (unexpected.length > 0)
    violations.push(
      `${unexpected.length} charge orchestration(s) failed unexpectedly, e.g. ${unexpected[0].instanceId}: ${unexpected[0].output.replace(/\s+/g, ' ').slice(0, 300)}`,
    );

  return { parkedByReason, leftInProgress: leftInProgress.length, orphanLocalRows: orphanLocalRows.length, unfinished: unfinished.length };
}
