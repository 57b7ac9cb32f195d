import { LeaseLostError } from '../protocol/errors';
import type { Claim, IdempotencyStore } from '../protocol/IdempotencyStore';
import { scopedKeyString } from '../protocol/keys';

/** Timers of the heartbeat; inject fake ones in a test. */
export interface HeartbeatTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Epoch milliseconds (the store's clock, so a lapse is judged as the store judges it). */
  nowMs(): number;
}

/** Longest delay a Node timer takes (a longer one fires at once); a later lease end is checked again then. */
const MAX_TIMER_MS = 2_147_483_647;

const realTimers = (nowMs: () => number): HeartbeatTimers => ({
  setTimeout: (callback, ms) => {
    const handle = setTimeout(callback, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  nowMs,
});

/**
 * Keeps a claim's lease alive while its work runs: every `intervalMs` (a third of the lease by
 * default) it renews the lease with the claim's **current** ETag, and remembers the new one.
 * Renewals are serialised: the work's own {@link renew} goes through the same queue, so two renewals
 * never race on one ETag, and the completion uses the ETag of the last renewal.
 *
 * ```
 *  claim        renew        renew        renew          stop -> complete(current claim)
 *  |-- lease/3 -->|-- lease/3 -->|-- lease/3 -->|-- ... -->|
 *  |<------------ lease ------------>|  (each renewal pushes the end one lease ahead)
 * ```
 *
 * A renewal that fails without an answer about the lease (its call deadline passed: it may have landed) is
 * tried again within a third of the time left before the lease end, not an interval later, so a renewal that
 * landed is confirmed before the local timer would judge the lease lost.
 *
 * The lease is **lost** when a renewal is refused (`LeaseLostError`: another claimant took the record
 * over), or when no renewal was confirmed before the lease's end, after which anyone may take it over.
 * The second is judged by a local timer, armed from the lease end of the claim or of the last confirmed
 * renewal (by the store's clock, `nowMs`), not by a renewal call failing: a store that hangs holds a
 * renewal up to its call deadline, long after the lease ended. The timer fires `marginMs` before the end
 * (a tenth of the lease, at most 1 s: timers may run late on a loaded machine). Then {@link signal}
 * aborts with a `LeaseLostError` as its reason, renewals stop, and the wrapper refuses to complete the claim.
 *
 * ```
 *  claim/renewal confirmed (lease end E)      E - margin   E
 *  |------------------------------------------|-----------|   no renewal confirmed by E - margin:
 *                                             abort             abort, whatever the store is doing
 * ```
 */
export class LeaseHeartbeat {
  private current: Claim;
  /** Made on first use: work that never reads the signal and a lease never lost cost no AbortController. */
  private controller: AbortController | undefined;
  private lostReason: LeaseLostError | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** Renewals queued or running (the work's own and the heartbeat's). */
  private renewing = 0;
  private timer: unknown;
  private lapseTimer: unknown;
  private stopped = false;
  /** Aborts this long before the lease end (see the class comment). */
  readonly marginMs: number;
  private readonly timers: HeartbeatTimers;

  constructor(
    private readonly store: IdempotencyStore,
    claim: Claim,
    private readonly leaseMs: number,
    timers?: Partial<HeartbeatTimers>,
    private readonly intervalMs = Math.max(1, Math.floor(leaseMs / 3)),
  ) {
    this.current = claim;
    const defaults = realTimers(timers?.nowMs ?? (() => Date.now()));
    this.timers = { ...defaults, ...timers };
    this.marginMs = Math.min(1_000, Math.floor(leaseMs / 10));
  }

  /** The claim with its latest ETag and lease end. */
  get claim(): Claim {
    return this.current;
  }

  /** Aborted (reason: `LeaseLostError`) once the lease is lost; the work should stop. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.lostReason !== undefined) this.controller.abort(this.lostReason);
    }
    return this.controller.signal;
  }

  /** True once the lease is lost (then {@link signal} is aborted, with {@link lossReason} as its reason). */
  get lost(): boolean {
    return this.lostReason !== undefined;
  }

  /** Why the lease was lost, or undefined while it is held. */
  get lossReason(): LeaseLostError | undefined {
    return this.lostReason;
  }

  /**
   * Starts watching the lease end and, unless `renewals` is false, the periodic renewals. Without
   * renewals the signal still aborts at the lease end: the work was told how long it had.
   *
   * With renewals, one timer runs until the first renewal is due (a third of the lease): work that ends before
   * then never arms the lease-end timer. That timer is armed when the first renewal starts, which is before the
   * lease end less the margin, so the signal aborts exactly when it would have (see {@link armLapse}).
   */
  start(renewals = true): this {
    const lapseDelayMs = this.current.leaseExpiresAtMs - this.marginMs - this.timers.nowMs();
    if (!renewals || this.intervalMs >= lapseDelayMs) this.armLapse();
    if (renewals) this.schedule();
    return this;
  }

  /**
   * Renews now, in line with the heartbeat's own renewals. @returns the renewed claim.
   * @throws LeaseLostError when the lease is lost (then {@link signal} is aborted too); store errors.
   */
  renew(): Promise<Claim> {
    this.renewing++;
    const run = this.queue.then(() => this.renewOnce());
    this.queue = run.then(
      () => void this.renewing--,
      () => void this.renewing--,
    );
    return run;
  }

  /** Stops renewing and waits for a renewal in flight. @returns the claim to complete or release. */
  async stop(): Promise<Claim> {
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    if (this.lapseTimer !== undefined) this.timers.clearTimeout(this.lapseTimer);
    // A renewal in flight is waited for, unless the lease is lost already (then its answer changes nothing).
    if (!this.lost && this.renewing > 0) {
      let onAbort = (): void => undefined;
      const aborted = new Promise<void>((resolve) => (onAbort = resolve));
      this.signal.addEventListener('abort', onAbort, { once: true });
      this.armLapse(); // the lease may still end while the renewal hangs
      await Promise.race([this.queue, aborted]);
      this.signal.removeEventListener('abort', onAbort);
      if (this.lapseTimer !== undefined) this.timers.clearTimeout(this.lapseTimer);
    }
    return this.current;
  }

  /** (Re-)arms the local timer that aborts the signal `marginMs` before the current lease end. */
  private armLapse(): void {
    if (this.lapseTimer !== undefined) this.timers.clearTimeout(this.lapseTimer);
    if (this.lost) return;
    const deadline = this.current.leaseExpiresAtMs - this.marginMs;
    const check = (): void => {
      if (this.lost) return;
      const left = deadline - this.timers.nowMs();
      if (left > 0) {
        this.lapseTimer = this.timers.setTimeout(check, Math.min(left, MAX_TIMER_MS)); // the timer ran early, or the clock is not wall time
        return;
      }
      this.lose(
        new LeaseLostError(
          scopedKeyString(this.current.key),
          this.current.attempt,
          `renewLease (no renewal was confirmed before the lease end at ${this.current.leaseExpiresAtMs} ms, less a ${this.marginMs} ms margin)`,
        ),
      );
    };
    this.lapseTimer = this.timers.setTimeout(check, Math.min(MAX_TIMER_MS, Math.max(0, deadline - this.timers.nowMs())));
  }

  private schedule(delayMs = this.intervalMs): void {
    if (this.stopped || this.lost) return;
    this.timer = this.timers.setTimeout(() => {
      if (this.lapseTimer === undefined) this.armLapse(); // the first renewal: from now on the lease end is watched
      this.renew().then(
        () => this.schedule(),
        // A failure is judged in renewOnce; unless lost, the next try comes before the lease end (see retryDelayMs).
        () => this.schedule(this.retryDelayMs()),
      );
    }, delayMs);
  }

  /**
   * When to try again after a renewal failed without losing the lease (no answer by the call deadline, a 503):
   * a third of the time left before the abort deadline (lease end less the margin), at most an interval. The failed
   * call may have landed (its answer came late), so the lease is held at the store while this process has not
   * seen it: a full interval later the local timer would abort first. The retry confirms it (the store sees its
   * own claim's moved ETag and renews again) with two thirds of that time left for its answer, or fails again and
   * is tried again sooner, each time a third of what is left (never sooner than a quarter of the margin).
   */
  private retryDelayMs(): number {
    const left = this.current.leaseExpiresAtMs - this.marginMs - this.timers.nowMs();
    const floorMs = Math.max(1, Math.floor(this.marginMs / 4)); // never a hot loop on a store that fails at once
    return Math.max(floorMs, Math.min(this.intervalMs, Math.floor(left / 3)));
  }

  private async renewOnce(): Promise<Claim> {
    this.throwIfLost();
    try {
      const renewed = await this.store.renewLease(this.current, this.leaseMs);
      // Confirmed after the lease was lost (the answer came too late): the loss stands.
      this.throwIfLost();
      this.current = renewed;
      if (!this.stopped) this.armLapse();
      return this.current;
    } catch (error) {
      this.throwIfLost();
      if (error instanceof LeaseLostError) this.lose(error);
      else if (this.timers.nowMs() >= this.current.leaseExpiresAtMs) {
        this.lose(new LeaseLostError(scopedKeyString(this.current.key), this.current.attempt, 'renewLease (the lease lapsed while renewals failed)'));
      }
      throw error;
    }
  }

  /** Throws the `LeaseLostError` the lease was lost with; does nothing while the lease is held. @throws LeaseLostError */
  throwIfLost(): void {
    const reason = this.lostReason;
    if (reason !== undefined) throw reason;
  }

  private lose(error: LeaseLostError): void {
    if (this.lostReason) return;
    this.lostReason = error;
    this.controller?.abort(error);
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
  }
}
