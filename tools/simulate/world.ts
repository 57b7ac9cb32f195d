import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from 'azure-functions-idempotency';

/**
 * A Functions host process running one trigger invocation. When it dies (`dead`), every wait the invocation makes
 * through the world never ends: its code stops where it stands, its answers never arrive, nothing it would have done
 * next happens. A request it had already sent still lands (`sleep`'s `transit`).
 */
export class HostProcess {
  dead = false;
  constructor(readonly name: string) {}
}

const processes = new AsyncLocalStorage<HostProcess>();

/** Runs `run` as code of `process` (every promise chain it starts belongs to it). */
export function runInProcess<T>(process: HostProcess, run: () => T): T {
  return processes.run(process, run);
}

/** One thing that happens at a virtual time. */
interface Event {
  readonly atMs: number;
  readonly seq: number;
  readonly run: () => void;
}

/** A step of the schedule, for the trace a failing seed prints. */
export interface TraceLine {
  readonly atMs: number;
  readonly text: string;
}

/**
 * The virtual world: a clock that moves only from event to event, and the events in time order (ties in the order
 * they were scheduled). The app's code runs as ordinary async functions; every wait it makes (a store call's latency,
 * a sleep, a queue hop) is an event here, so nothing depends on the machine's speed and one seed replays exactly.
 * Between two events every promise that can settle settles (`settle`: one macrotask turn; nothing real is pending).
 */
export class World implements Clock {
  private now: number;
  private seq = 0;
  private readonly queue: Event[] = [];
  readonly trace: TraceLine[] = [];
  /** Events run so far (the cost measure that does not depend on the machine). */
  steps = 0;

  constructor(readonly startMs: number) {
    this.now = startMs;
  }

  nowMs(): number {
    return this.now;
  }

  /** Runs `run` at `atMs` (not before now). */
  at(atMs: number, run: () => void): void {
    const event = { atMs: Math.max(this.now, Math.round(atMs)), seq: this.seq++, run };
    // Binary insertion: the queue stays sorted by (atMs, seq).
    let lo = 0;
    let hi = this.queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const other = this.queue[mid];
      if (other.atMs < event.atMs || (other.atMs === event.atMs && other.seq < event.seq)) lo = mid + 1;
      else hi = mid;
    }
    this.queue.splice(lo, 0, event);
  }

  /**
   * A promise that settles `ms` of virtual time from now; never, when the process that waits has died by then, unless
   * the wait is a request's `transit` to a server (it lands whatever becomes of its sender).
   */
  sleep(ms: number, transit = false): Promise<void> {
    const process = transit ? undefined : processes.getStore();
    return new Promise((resolve) =>
      this.at(this.now + Math.max(0, ms), () => {
        if (!process?.dead) resolve();
      }),
    );
  }

  log(text: string): void {
    this.trace.push({ atMs: this.now, text });
  }

  /** The time of the next event, or undefined when none is left. */
  nextAtMs(): number | undefined {
    return this.queue[0]?.atMs;
  }

  /** Runs the events up to `untilMs` (inclusive) or until `stop` says so; settles the promises after each. */
  async runUntil(untilMs: number, stop: () => boolean = () => false): Promise<void> {
    await settle();
    while (this.queue.length > 0 && this.queue[0].atMs <= untilMs && !stop()) {
      const event = this.queue.shift()!;
      this.now = event.atMs;
      this.steps++;
      event.run();
      await settle();
    }
    if (this.now < untilMs && !stop()) this.now = untilMs;
  }
}

/** One macrotask turn: every microtask chain that can go on has gone on (no real I/O is pending in a simulation). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
