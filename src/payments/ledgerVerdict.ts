import { RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency';
import type { ListedCharge } from './PaymentProviderClient';
import { RECORD_WRITE_RETRY, type RetryBudget } from './recordWriteRetry';
import type { ChargeResult } from './schema';

/**
 * The ledger check under every guard (issue 62 item 4, docs/DESIGN.md "Payments: a ledger check under every guard"):
 * every charge the provider made in a time window must be held by the payments record of its `Idempotency-Key`,
 * completed `succeeded` with that very charge id. Independent of how the app decided to charge: it reads only the
 * provider's list (`listCharges`) and the records (point reads). Pure: the provider, the records, the clock and where
 * a discrepancy goes are passed in.
 *
 * What a listed charge is, against its record:
 *
 * ```
 *  provider says failed .......................................... not-charged  (no money taken)
 *  no Idempotency-Key ............................................ discrepancy  no-key (not made by this app's runs)
 *  no record ..................................................... discrepancy  no-record
 *  record COMPLETED succeeded, same charge id .................... matched
 *  record COMPLETED succeeded, another charge id ................. discrepancy  record-other-charge
 *  record COMPLETED declined / rejected / failed (held) .......... discrepancy  record-not-succeeded
 *  record IN_PROGRESS / RELEASED, or the charge `pending` ........ undecided    (kept, re-checked each tick)
 *  undecided and older than the grace ............................ discrepancy  undecided-past-grace
 * ```
 *
 * The window only covers charges younger than the records' retention: a record lives at least its retention after its
 * last write, which comes after its charge, so a charge younger than the retention always finds its record unless
 * something removed it. An older charge's record may be swept (that is the retention, not a discrepancy of the check):
 * the window's start is clipped to `now - retention` (and the clip reported).
 */

/** What the check found for one charge. */
export type ChargeVerdict =
  | { readonly kind: 'matched' }
  | { readonly kind: 'not-charged' }
  | { readonly kind: 'undecided'; readonly why: UndecidedWhy }
  | { readonly kind: 'discrepancy'; readonly reason: DiscrepancyReason; readonly detail: string };

/** Why a charge cannot be decided yet: its record is still being worked on, or the provider has not settled it. */
export type UndecidedWhy = 'record-in-progress' | 'charge-pending';

/** Why a charge is a discrepancy (the `kind` of the metric and of the key console's listing). */
export type DiscrepancyReason = 'no-key' | 'no-record' | 'record-other-charge' | 'record-not-succeeded' | 'undecided-past-grace';

/** A discrepancy as reported: the charge (id, key, when created) and why. Never the payload (no customer, amount or currency). */
export interface LedgerDiscrepancy {
  readonly chargeId: string;
  /** The charge's `Idempotency-Key` (this app: the paymentId); '' for a charge made without one. */
  readonly paymentId: string;
  readonly createdMs: number;
  readonly reason: DiscrepancyReason;
  /** What the record says (its status and result's status, or that there is none). */
  readonly detail: string;
}

/**
 * Margin on top of the run's own bounds in {@link ledgerGraceMs}: the reconciler's grace (5 min) and one expiry-timer
 * period (15 min) before it restarts a run that ended without its record, Durable's queue waits, and a tick's period.
 */
export const LEDGER_GRACE_MARGIN_MS = 60 * 60_000;

/**
 * How long a charge may stay undecided before it is a discrepancy, from its creation: the run's provider retry budget
 * (`PAYMENT_RETRY_BUDGET_MINUTES`: no new call starts after it, so the last charge is made within it), plus the record
 * write's own retries (src/payments/recordWriteRetry.ts, 7 days: a storage outage is ridden out inside the run), plus
 * {@link LEDGER_GRACE_MARGIN_MS} for the reconciler to restart a run that ended without writing. A record still in
 * progress past that is a run nobody will finish by itself. Defaults: 60 min + 7 d + 60 min.
 */
export function ledgerGraceMs(retry: Pick<RetryBudget, 'budgetMs'>, recordWrite: Pick<RetryBudget, 'budgetMs'> = RECORD_WRITE_RETRY): number {
  return retry.budgetMs + recordWrite.budgetMs + LEDGER_GRACE_MARGIN_MS;
}

/** The verdict on `charge` given its record (undefined: none) at `nowMs`. Pure. */
export function classifyCharge(charge: ListedCharge, record: IdempotencyRecord | undefined, nowMs: number, graceMs: number): ChargeVerdict {
  if (charge.status === 'failed') return { kind: 'not-charged' };
  if (charge.idempotencyKey === undefined) return { kind: 'discrepancy', reason: 'no-key', detail: 'a charge made without an Idempotency-Key' };
  const pastGrace = nowMs - charge.createdMs > graceMs;
  const undecided = (why: UndecidedWhy, detail: string): ChargeVerdict =>
    pastGrace
      ? { kind: 'discrepancy', reason: 'undecided-past-grace', detail: `${detail} for longer than the grace (${Math.round(graceMs / 60_000)} min)` }
      : { kind: 'undecided', why };
  if (!record) return { kind: 'discrepancy', reason: 'no-record', detail: 'no payments record for the key' };
  if (record.status !== RecordStatus.Completed) return undecided('record-in-progress', `record ${record.status}`);
  const result = record.result as Partial<ChargeResult> | undefined;
  if (result?.status !== 'succeeded') {
    const code = (result as { code?: unknown } | undefined)?.code;
    const codeText = typeof code === 'string' ? ` (${code})` : '';
    return {
      kind: 'discrepancy',
      reason: 'record-not-succeeded',
      detail: `record completed ${typeof result?.status === 'string' ? result.status : 'without a result'}${codeText}`,
    };
  }
  if ((result as { chargeId?: unknown }).chargeId !== charge.id)
    return { kind: 'discrepancy', reason: 'record-other-charge', detail: `record completed succeeded with another charge` };
  if (charge.status === 'pending') return undecided('charge-pending', 'charge pending at the provider');
  return { kind: 'matched' };
}
