import { performance } from 'node:perf_hooks';
import { deadlineError, type StoreCallKind } from './deadline';

/** One call in flight: when it must have settled, and how to fail it then. */
interface Pending {
  readonly deadlineMs: number;
  readonly expire: () => void;
  settled: boolean;
}

/** Controllers kept for reuse at most (about the calls in flight at once). */
const MAX_SPARE_CONTROLLERS = 64;
/** Calls one controller serves at most before it is dropped (bounds what an SDK that never removes its listeners leaves). */
const MAX_USES = 64;

/** An `AbortController` that can serve another call once its own settled without an abort. */
interface Reusable {
  readonly controller: AbortController;
  uses: number;
}

/**
 * The deadlines of one store's calls, all of the same length, with **one timer** for all of them instead of one per
 * call. Calls start in order, so their deadlines come in that order: a queue, and a timer armed for the earliest
 * deadline not yet settled. A call that settles is marked and skipped; when none is left the timer is cleared.
 *
 * Gives what `withDeadline` gives: each call gets its own `AbortSignal` (aborted at its deadline, with the
 * `StoreUnavailableError` as reason, so the SDK stops the request and any retry), and the returned promise settles
 * by the deadline whatever the SDK does; an answer after it is ignored.
 *
 * ```
 *  call 1 starts  call 2 starts      call 1 answers      deadline 2: call 2 fails
 *  |--------------|------------------|-------------------|
 *  timer armed for deadline 1 ---> fires: 1 settled, re-armed for deadline 2 ---> fires
 * ```
 *
 * With `reuseSignals`, a call's `AbortController` serves a later call once its own call has settled by its answer (never
 * once aborted: an aborted one is dropped), so each call in flight still has a signal of its own that aborts only at
 * its own deadline; a new `AbortController` per call is most of this queue's cost otherwise. Only for an SDK that
 * removes its abort listeners when a request ends (`@azure/data-tables`' HTTP client does; a listener left behind
 * would only abort a request that has ended).
 */
export class CallDeadlines {
  private readonly queue: Pending[] = [];
  private readonly spare: Reusable[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The `setTimeout` the timer was armed with: a test that swaps timers (fake <-> real) gets the timer re-armed. */
  private armedWith: typeof setTimeout | undefined;

  constructor(
    readonly timeoutMs: number,
    private readonly storeName: string,
    private readonly reuseSignals = false,
  ) {}

  /**
   * Runs `call` under this queue's deadline (see the class comment).
   * @throws StoreUnavailableError (retryable) when the deadline passes first; other failures of `call` pass through.
   */
  run<T>(operation: string, kind: StoreCallKind, call: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    const reusable = this.spare.pop() ?? { controller: new AbortController(), uses: 0 };
    const controller = reusable.controller;
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = {
        deadlineMs: performance.now() + this.timeoutMs,
        settled: false,
        expire: () => {
          const error = deadlineError(this.timeoutMs, operation, kind, this.storeName);
          controller.abort(error);
          reject(error);
        },
      };
      const settle = (): boolean => {
        if (pending.settled) return false;
        pending.settled = true;
        this.dropSettled();
        this.keep(reusable);
        return true;
      };
      this.add(pending);
      let answer: Promise<T>;
      try {
        answer = call(controller.signal);
      } catch (error) {
        // Whatever `call` threw is the call's failure, passed through as it is (as an async call would reject with it).
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        if (settle()) reject(error);
        return;
      }
      answer.then(
        (value) => void (settle() && resolve(value)),
        // The SDK answers an abort with its own AbortError: the deadline's error was given already.
        (error: unknown) => void (settle() && reject(error as Error)),
      );
    });
  }

  /** Keeps the controller of a call settled by its answer for a later call (see the class comment). */
  private keep(reusable: Reusable): void {
    if (!this.reuseSignals || reusable.controller.signal.aborted || ++reusable.uses >= MAX_USES) return;
    if (this.spare.length < MAX_SPARE_CONTROLLERS) this.spare.push(reusable);
  }

  private add(pending: Pending): void {
    this.queue.push(pending);
    if (this.timer === undefined || this.armedWith !== setTimeout) this.arm();
  }

  /** Drops settled calls from the front; clears the timer when nothing is pending. */
  private dropSettled(): void {
    while (this.head < this.queue.length && this.queue[this.head].settled) this.head++;
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
      this.disarm();
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private arm(): void {
    this.disarm();
    const next = this.queue[this.head];
    if (next === undefined) return;
    this.armedWith = setTimeout;
    this.timer = setTimeout(() => this.expireDue(), Math.max(0, Math.ceil(next.deadlineMs - performance.now())));
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Fails every call whose deadline has passed, then re-arms for the next one. */
  private expireDue(): void {
    this.timer = undefined;
    const now = performance.now();
    while (this.head < this.queue.length) {
      const next = this.queue[this.head];
      if (!next.settled) {
        if (next.deadlineMs > now) break;
        next.settled = true;
        next.expire();
      }
      this.head++;
    }
    this.dropSettled();
    if (this.head < this.queue.length) this.arm();
  }
}
