import type { Clock } from 'azure-functions-idempotency/internal';

/** Real time plus an offset that only grows (`jump(ms)`: the demo's time phase); waits still take real time. */
export class JumpClock implements Clock {
  private offset = 0;

  nowMs(): number {
    return Date.now() + this.offset;
  }

  /** Total jumped so far. */
  get offsetMs(): number {
    return this.offset;
  }

  /** Moves the clock forward by `ms` (>= 0). */
  jump(ms: number): void {
    if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`a jump must be a finite, non-negative number of milliseconds, got ${ms}`);
    this.offset += ms;
  }
}
