import { IdempotencyError, LeaseLostError, RecordStatus, type Claim, type IdempotencyStore } from 'azure-functions-idempotency';
import type { CompleteRecordOutcome, RecordedCharge } from './completeRecord';
import type { ChargeResult } from './schema';

/**
 * The fence of a handoff run's provider calls (issue 51 items 1 and 2): a condition on the record, not a read of it.
 *
 * An activity work item runs at least once and may run late (a copy sent again by a re-run episode, an answered item
 * whose delete failed, a dead worker's item after the visibility timeout), after the run settled the payment. So:
 *
 * - A provider call is **announced on the record** before it is made: a lease renewal of the run's claim, conditional
 *   on the version just read (`If-Match`), for {@link CALL_LEASE_MS}. A record that moved on (completed, taken over)
 *   refuses it; a store that does not answer refuses the call too (never fails open: no window tells a fresh call from
 *   a copy). The trade: a long store fault fails rounds, and the run's budget can end `failed` (alerted; the runbook).
 * - The run's `failed` (no charge found) is **written only on the version its look-up was decided on** (an exact
 *   completion), and only once every announced call's lease has lapsed: a call announced after the look-up's read
 *   moved the version (the write is refused, the run settles again); one announced before it has landed at the provider,
 *   and shows in the look-up.
 *
 * So a call and a `failed` exclude each other at the store: whichever lands first, the other is refused.
 */

/**
 * How long an announced call may take to be made and to show in a look-up: the client's timeout (10 s by default), a
 * charge the provider finishes after the client gave up (Stripe answers 409 for a key in flight meanwhile), and the
 * look-up's lag (Stripe's search index: up to about a minute). A settle looks up only after it has lapsed.
 */
export const CALL_LEASE_MS = 3 * 60_000;

/** An announced call is made only while this much of its lease is left (two thirds; scaled with a shorter lease): a mark that took longer to land is not used. */
export const CALL_MIN_LEASE_LEFT_MS = 2 * 60_000;

/** What the fence found: the record moved on (answered without a call), or the claim as the record holds it now. */
export type FenceRead = { readonly movedOn: RecordedCharge } | { readonly current: Claim };

/**
 * Reads the record for a call of `claim`: in progress under the claim's attempt and generation -> `current` (the claim
 * at the version read); anything else -> `movedOn`, what the record says (its result when completed in this generation,
 * else `failed`, "the record moved on"), marked `fenced` (nothing written).
 * @throws what the store throws (a fence that cannot read decides nothing)
 */
export async function readFence(store: IdempotencyStore, claim: Claim): Promise<FenceRead> {
  const record = await store.get(claim.key);
  if (record?.status === RecordStatus.InProgress && record.attempt === claim.attempt && record.createdAtMs === claim.createdAtMs)
    return { current: { ...claim, etag: record.etag, leaseExpiresAtMs: record.leaseExpiresAtMs } };
  const result: ChargeResult =
    record?.status === RecordStatus.Completed && record.createdAtMs === claim.createdAtMs
      ? (record.result as ChargeResult)
      : {
          status: 'failed',
          reason: `not charged: the record moved on (${record ? `${record.status}, attempt ${record.attempt}` : 'gone'}) before this call of attempt ${claim.attempt}`,
        };
  return { movedOn: { result, record: 'fenced' } };
}

/**
 * What the fence saw of earlier calls of the attempt, before marking this one: `undefined` when the record holds the
 * claim's own lease (no call announced since the claim: this is the attempt's first), else the lease an earlier
 * announced call left (ms; zero or less: lapsed). `check` may refuse the call (throw) on it; nothing is marked then.
 */
export type EarlierCallCheck = (earlierLeaseLeftMs: number | undefined) => void;

/**
 * Announces a provider call on the record (see above): the claim renewed for {@link CALL_LEASE_MS} at the version
 * read. Answers the claim to complete the record with after the call (its version), or what the record says when it
 * moved on (no call).
 * @throws FenceUnreadableError (retryable) when the store cannot read or write it, or the mark landed too late; what
 *   `check` throws (before the mark)
 */
export async function announceCall(
  store: IdempotencyStore,
  claim: Claim,
  nowMs: () => number,
  leaseMs = CALL_LEASE_MS,
  check?: EarlierCallCheck,
): Promise<{ readonly marked: Claim } | { readonly movedOn: RecordedCharge }> {
  let read: FenceRead;
  try {
    read = await readFence(store, claim);
  } catch (error) {
    throw new FenceUnreadableError(error instanceof Error ? `${error.name}: ${error.message}` : String(error), error);
  }
  if ('movedOn' in read) return read;
  // Only an announce moves the lease of a handoff run's claim (a hold pass or a retention write moves the version, not it).
  // Compared in whole milliseconds: the stores keep the lease as an integer (a claim made with a fractional one reads back truncated).
  const sameLease = Math.trunc(read.current.leaseExpiresAtMs) === Math.trunc(claim.leaseExpiresAtMs);
  check?.(sameLease ? undefined : read.current.leaseExpiresAtMs - nowMs());
  try {
    const marked = await store.renewLease(read.current, leaseMs);
    if (marked.leaseExpiresAtMs - nowMs() < (leaseMs * CALL_MIN_LEASE_LEFT_MS) / CALL_LEASE_MS)
      throw new FenceUnreadableError(`the call's mark landed with ${Math.round((marked.leaseExpiresAtMs - nowMs()) / 1000)} s of its lease left`);
    return { marked };
  } catch (error) {
    if (error instanceof FenceUnreadableError) throw error;
    if (error instanceof LeaseLostError) {
      // Settled or taken over between the read and the mark: what the record says now (a store fault: refused).
      const again = await readFence(store, claim).catch((cause: unknown) => {
        throw new FenceUnreadableError('the record changed under the mark and could not be read again', cause);
      });
      if ('movedOn' in again) return again;
    }
    throw new FenceUnreadableError(error instanceof Error ? `${error.name}: ${error.message}` : String(error), error);
  }
}

/**
 * The settle's read: the claim at the version read, for an exact completion, when no announced call can still be on
 * its way (the lease has lapsed); what the record says when it moved on.
 * @throws CallInFlightError (retryable) while a call's lease runs; what the store throws
 */
export async function readForSettle(
  store: IdempotencyStore,
  claim: Claim,
  nowMs: () => number,
): Promise<{ readonly exact: Claim } | { readonly movedOn: RecordedCharge }> {
  const read = await readFence(store, claim);
  if ('movedOn' in read) return read;
  if (read.current.leaseExpiresAtMs > nowMs()) throw new CallInFlightError(read.current.leaseExpiresAtMs - nowMs());
  return { exact: read.current };
}

/**
 * A hold is written so that no call of its attempt can land after it (a held payment is alerted: an operator who then
 * finds no charge at the provider must be right): never while an announced call's lease runs, and only on the version
 * read (an exact completion: a call announced in between refuses it).
 * @throws CallInFlightError (retryable) when `current` holds a lease announced since `claim` that has not lapsed
 */
export function assertNoCallInFlight(claim: Claim, current: Claim, nowMs: number): void {
  const announced = Math.trunc(current.leaseExpiresAtMs) !== Math.trunc(claim.leaseExpiresAtMs);
  if (announced && current.leaseExpiresAtMs > nowMs) throw new CallInFlightError(current.leaseExpiresAtMs - nowMs);
}

/**
 * After an exact hold write was refused (the record changed since it was read): what the record says when it moved on
 * (a call's answer, a settle), else the call announced since (`CallInFlightError`: the run asks again later).
 */
export async function afterHoldRefused(store: IdempotencyStore, claim: Claim, nowMs: number): Promise<RecordedCharge> {
  const now = await readFence(store, claim);
  if ('movedOn' in now) return now.movedOn;
  throw new CallInFlightError(Math.max(0, now.current.leaseExpiresAtMs - nowMs));
}

/**
 * The run's hold written on durable timers (the activity's own write did not land, or the settle could not be made):
 * by the same rule as the activity's. The record read: moved on -> left alone (`fenced`); a call announced since the
 * claim with lease left -> `CallInFlightError` (the run's timer loop tries again); else `write` on the version read (an
 * exact completion), a call announced in between refusing it (the record read again answers, or `CallInFlightError`).
 * @throws CallInFlightError (retryable); what the store or `write` throws
 */
export async function writeHoldOnVersionRead(
  store: IdempotencyStore,
  claim: Claim,
  nowMs: number,
  write: (current: Claim) => Promise<CompleteRecordOutcome>,
): Promise<CompleteRecordOutcome> {
  const read = await readFence(store, claim);
  if ('movedOn' in read) return 'fenced';
  assertNoCallInFlight(claim, read.current, nowMs);
  try {
    return await write(read.current);
  } catch (error) {
    if (!(error instanceof LeaseLostError)) throw error;
    await afterHoldRefused(store, claim, nowMs);
    return 'fenced';
  }
}

/**
 * The fence could not be read or written (the store does not answer, refuses: 403, or the mark came too late): nothing
 * is called. Retryable: the run's round fails and it schedules a fresh call; a stale copy's answer goes nowhere.
 */
export class FenceUnreadableError extends IdempotencyError {
  constructor(why: string, cause?: unknown) {
    super(`not calling the provider: the call could not be announced on the record (${why.slice(0, 300)})`, { cause, retryable: true });
  }
}

/** A provider call was announced on the record and may still be on its way: the settle looks again after its lease. */
export class CallInFlightError extends IdempotencyError {
  constructor(readonly leaseLeftMs: number) {
    super(`not settling yet: a provider call was announced on the record and may be on its way (${Math.ceil(leaseLeftMs / 1000)} s of its lease left)`, {
      retryable: true,
    });
  }
}

/**
 * The charge was not sent: the call's lease has less left than a charge needs to show in a look-up (the POST's timeout,
 * the provider's finish window, the look-up's lag: src/config/callTiming.ts). A settle could otherwise look up before a
 * charge this call made shows, and write "no charge". Retryable: the round fails, the run announces a fresh call.
 */
export class CallLeaseSpentError extends IdempotencyError {
  constructor(
    readonly leaseLeftMs: number,
    readonly postWindowMs: number,
  ) {
    super(
      `not sending the charge: the call's lease has ${Math.max(0, Math.round(leaseLeftMs / 1000))} s left and a charge needs ${Math.round(postWindowMs / 1000)} s to show in a look-up`,
      { retryable: true },
    );
  }
}
