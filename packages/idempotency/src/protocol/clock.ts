/** The source of time for everything in the core; inject a fake one in tests. */
export interface Clock {
  /** Current time in epoch milliseconds. */
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };
