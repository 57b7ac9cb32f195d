import { LeaseLostError } from './errors';
import type { Claim, IdempotencyStore } from './IdempotencyStore';
import { scopedKeyString } from './keys';

/** Timers of the heartbeat; inject fake ones in a test. */
export interface HeartbeatTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Epoch milliseconds (the store's clock, so a lapse is judged as the store judges it). */
  nowMs(): number;
}

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
 * The lease is **lost** when a renewal is refused (`LeaseLostError`: another claimant took the record
 * over), or when renewals kept failing (store unreachable) until the lease lapsed, after which anyone
 * may take it over. Then {@link signal} aborts with a `LeaseLostError` as its reason, renewals stop,
 * and the wrapper refuses to complete the claim.
 */
export class LeaseHeartbeat {
  private current: Claim;
  private readonly controller = new AbortController();
  private queue: Promise<unknown> = Promise.resolve();
  private timer: unknown;
  private stopped = false;
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
  }

  /** The claim with its latest ETag and lease end. */
  get claim(): Claim {
    return this.current;
  }

  /** Aborted (reason: `LeaseLostError`) once the lease is lost; the work should stop. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Starts the periodic renewals. */
  start(): this {
    this.schedule();
    return this;
  }

  /**
   * Renews now, in line with the heartbeat's own renewals. @returns the renewed claim.
   * @throws LeaseLostError when the lease is lost (then {@link signal} is aborted too); store errors.
   */
  renew(): Promise<Claim> {
    const run = this.queue.then(() => this.renewOnce());
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Stops renewing and waits for a renewal in flight. @returns the claim to complete or release. */
  async stop(): Promise<Claim> {
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    await this.queue;
    return this.current;
  }

  private schedule(): void {
    if (this.stopped || this.signal.aborted) return;
    this.timer = this.timers.setTimeout(() => {
      this.renew().then(
        () => this.schedule(),
        () => this.schedule(), // a failure is judged in renewOnce; the next tick tries again unless lost
      );
    }, this.intervalMs);
  }

  private async renewOnce(): Promise<Claim> {
    if (this.signal.aborted) throw this.signal.reason;
    try {
      this.current = await this.store.renewLease(this.current, this.leaseMs);
      return this.current;
    } catch (error) {
      if (error instanceof LeaseLostError) this.lose(error);
      else if (this.timers.nowMs() >= this.current.leaseExpiresAtMs) {
        this.lose(new LeaseLostError(scopedKeyString(this.current.key), this.current.attempt, 'renewLease (the lease lapsed while renewals failed)'));
      }
      throw error;
    }
  }

  private lose(error: LeaseLostError): void {
    if (!this.signal.aborted) this.controller.abort(error);
  }
}
