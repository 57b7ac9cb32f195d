import type { IdempotencyRecord } from 'azure-functions-idempotency';
import type { ChargeListPage, ListedCharge } from './PaymentProviderClient';
import { classifyCharge, type ChargeVerdict, type LedgerDiscrepancy, type UndecidedWhy } from './ledgerVerdict';
export * from './ledgerVerdict';

/**
 * One tick of the ledger check (docs/DESIGN.md "Payments: a ledger check under every guard"): the checkpoint it carries,
 * the bounded walk of the provider's list from it, and the undecided charges re-checked. What a charge is against its
 * record: src/payments/ledgerVerdict.ts.
 */

/**
 * Most undecided charges a checkpoint keeps. When full, the walk stops before the next undecided charge (the window does
 * not move past it: nothing is skipped) and the tick says so; the entries drain as their records complete.
 * 200 entries of about 100 characters: 20,000 characters, inside a Table string property (32 K characters).
 */
export const MAX_PENDING = 200;

/** An undecided charge carried from tick to tick in the checkpoint. */
export interface PendingCharge {
  readonly id: string;
  readonly paymentId: string;
  readonly createdMs: number;
  readonly why: UndecidedWhy;
}

/** Where the check stands: charges created before `fromMs` are checked; within it, those up to `cursor`; plus the undecided. */
export interface LedgerCheckpoint {
  /** Start of the window still to walk (epoch ms). */
  readonly fromMs: number;
  /** The list's cursor inside the window (the last charge handled); undefined: from the window's start. */
  readonly cursor?: string;
  readonly pending: readonly PendingCharge[];
}

/** What one tick runs on. */
export interface LedgerCheckDeps {
  /** One page of the provider's list (`PaymentProviderClient.listCharges`). */
  readonly list: (window: { fromMs: number; toMs: number }, cursor?: string) => Promise<ChargeListPage>;
  /** The payments record of `paymentId` (a point read on the owner's store), undefined when there is none. */
  readonly record: (paymentId: string) => Promise<IdempotencyRecord | undefined>;
  /** True when this shard checks `paymentId`'s charges (its owner; with one shard, every key). Keyless charges: shard 0. */
  readonly owns: (paymentId: string | undefined) => boolean;
  /** Records a discrepancy where the key console finds it; false when it was already recorded (an overlapping tick). */
  readonly report: (discrepancy: LedgerDiscrepancy) => Promise<boolean>;
  readonly nowMs: () => number;
  /** `PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS` in ms: the window ends that long before now. */
  readonly delayMs: number;
  /** The records' retention: the window never starts earlier than `now - retentionMs`. */
  readonly retentionMs: number;
  readonly graceMs: number;
  /** List pages a tick reads at most (pending re-checks count as pages). */
  readonly maxPages: number;
  /** The tick's time budget. */
  readonly budgetMs: number;
  /** Default {@link MAX_PENDING}. */
  readonly maxPending?: number;
  /** Record reads in flight at once within a page (default {@link READ_CONCURRENCY}). */
  readonly readConcurrency?: number;
}

/** Record reads in flight at once within a page: a page of 100 point reads in about 7 round trips' time. */
export const READ_CONCURRENCY = 16;

/** `work` over `items`, at most `concurrency` at once, each outcome kept (in order), none thrown. */
async function inBatches<T, R>(items: readonly T[], concurrency: number, work: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const out: PromiseSettledResult<R>[] = [];
  for (let i = 0; i < items.length; i += concurrency) out.push(...(await Promise.allSettled(items.slice(i, i + concurrency).map(work))));
  return out;
}

/** What one tick did. */
export interface LedgerTickReport {
  /** The checkpoint to save (conditionally). */
  readonly checkpoint: LedgerCheckpoint;
  /** Charges given a verdict this tick (re-checked undecided ones included), by what they were. */
  readonly matched: number;
  readonly notCharged: number;
  readonly otherShard: number;
  readonly discrepancies: readonly LedgerDiscrepancy[];
  /** Of those, the ones an earlier (overlapping) tick had already recorded: not counted again. */
  readonly alreadyReported: number;
  readonly pages: number;
  /** Why the tick stopped before the window's end: `pages`, `budget`, `pending-full`; undefined when it reached it. */
  readonly stoppedBy?: 'pages' | 'budget' | 'pending-full';
  /** Charges older than the retention the window's start was clipped past (never checked: the checkpoint lagged). */
  readonly clippedFromMs?: number;
  /** The error that ended the tick early (a list or record read failed); the checkpoint still holds what was done. */
  readonly error?: unknown;
}

/**
 * One tick: re-checks the undecided charges of `checkpoint`, then walks the list from the checkpoint to `now - delay`,
 * bounded by pages and time. A failing list page or record read ends the tick with what was done so far in the
 * returned checkpoint and the error in `error` (the caller saves, then fails the tick). Never throws.
 */
export async function ledgerCheckTick(checkpoint: LedgerCheckpoint, deps: LedgerCheckDeps): Promise<LedgerTickReport> {
  const started = deps.nowMs();
  const deadline = started + deps.budgetMs;
  const maxPending = deps.maxPending ?? MAX_PENDING;
  const toMs = started - deps.delayMs;
  const oldest = started - deps.retentionMs;
  const clipped = checkpoint.fromMs < oldest;
  let fromMs = clipped ? oldest : checkpoint.fromMs;
  let cursor = clipped ? undefined : checkpoint.cursor;
  const counts = { matched: 0, notCharged: 0, otherShard: 0, alreadyReported: 0, pages: 0 };
  const discrepancies: LedgerDiscrepancy[] = [];
  const pending: PendingCharge[] = [];
  let stoppedBy: LedgerTickReport['stoppedBy'];
  const done = (error?: unknown): LedgerTickReport => ({
    checkpoint: { fromMs, ...(cursor !== undefined ? { cursor } : {}), pending },
    ...counts,
    discrepancies,
    stoppedBy,
    ...(clipped ? { clippedFromMs: checkpoint.fromMs } : {}),
    ...(error !== undefined ? { error } : {}),
  });
  const settle = async (charge: ListedCharge, verdict: ChargeVerdict): Promise<void> => {
    if (verdict.kind === 'matched') counts.matched++;
    else if (verdict.kind === 'not-charged') counts.notCharged++;
    else if (verdict.kind === 'undecided')
      pending.push({ id: charge.id, paymentId: charge.idempotencyKey ?? '', createdMs: charge.createdMs, why: verdict.why });
    else {
      const discrepancy: LedgerDiscrepancy = {
        chargeId: charge.id,
        paymentId: charge.idempotencyKey ?? '',
        createdMs: charge.createdMs,
        reason: verdict.reason,
        detail: verdict.detail,
      };
      if (await deps.report(discrepancy)) discrepancies.push(discrepancy);
      else counts.alreadyReported++;
    }
  };
  const verdictOf = async (charge: ListedCharge): Promise<ChargeVerdict> => {
    const record = charge.status === 'failed' || charge.idempotencyKey === undefined ? undefined : await deps.record(charge.idempotencyKey);
    return classifyCharge(charge, record, deps.nowMs(), deps.graceMs);
  };

  // 1. The undecided charges of earlier ticks: their record read again (a pending charge: its own list entry again).
  const carried = [...checkpoint.pending];
  for (let i = 0; i < carried.length; i++) {
    const entry = carried[i];
    if (deps.nowMs() >= deadline || counts.pages >= deps.maxPages) {
      pending.push(...carried.slice(i));
      stoppedBy = deps.nowMs() >= deadline ? 'budget' : 'pages';
      return done();
    }
    try {
      const asListed = { id: entry.id, createdMs: entry.createdMs, amount: 0, currency: '' };
      let charge: ListedCharge | undefined = { ...asListed, status: 'succeeded', idempotencyKey: entry.paymentId || undefined };
      if (entry.why === 'charge-pending') {
        counts.pages++;
        const page = await deps.list({ fromMs: entry.createdMs, toMs: entry.createdMs + 1 });
        charge = page.charges.find((c) => c.id === entry.id);
      }
      if (!charge) {
        // Not listed at its own time any more: kept until the grace decides (the provider's list may lag).
        if (deps.nowMs() - entry.createdMs <= deps.graceMs) pending.push(entry);
        else
          await settle(
            { ...asListed, status: 'pending', idempotencyKey: entry.paymentId },
            { kind: 'discrepancy', reason: 'undecided-past-grace', detail: 'charge pending, then no longer listed, for longer than the grace' },
          );
        continue;
      }
      await settle(charge, await verdictOf(charge));
    } catch (error) {
      pending.push(...carried.slice(i));
      return done(error);
    }
  }

  // 2. The window from the checkpoint to now - delay, page by page. An empty page with a cursor is not the end.
  if (toMs <= fromMs) return done();
  for (;;) {
    if (counts.pages >= deps.maxPages) {
      stoppedBy = 'pages';
      return done();
    }
    if (deps.nowMs() >= deadline) {
      stoppedBy = 'budget';
      return done();
    }
    let page: ChargeListPage;
    try {
      counts.pages++;
      page = await deps.list({ fromMs, toMs }, cursor);
    } catch (error) {
      return done(error);
    }
    // The page's records are read concurrently (bounded); the verdicts are then applied in list order, so a stop or a
    // failed read leaves the cursor on the last charge handled.
    const verdicts = await inBatches(page.charges, deps.readConcurrency ?? READ_CONCURRENCY, (charge) =>
      deps.owns(charge.idempotencyKey) ? verdictOf(charge) : Promise.resolve(undefined),
    );
    for (const [i, charge] of page.charges.entries()) {
      try {
        const read = verdicts[i];
        if (read.status === 'rejected') throw read.reason;
        const verdict = read.value;
        if (verdict === undefined) {
          counts.otherShard++;
        } else {
          if (verdict.kind === 'undecided' && pending.length >= maxPending) {
            // Full: stop before this charge (the next tick reads it again), never past it.
            stoppedBy = 'pending-full';
            return done();
          }
          await settle(charge, verdict);
        }
      } catch (error) {
        return done(error);
      }
      cursor = charge.id;
    }
    if (page.nextCursor === undefined) {
      fromMs = toMs;
      cursor = undefined;
      return done();
    }
    cursor = page.nextCursor === '' ? undefined : page.nextCursor;
  }
}
