/** One execution on an instance: when it started and how long it ran (epoch ms, ms). */
export interface Execution {
  readonly startMs: number;
  readonly durationMs: number;
}

/**
 * Flex Consumption's billing rule (learn.microsoft.com/azure/azure-functions/flex-consumption-plan#billing):
 * "The minimum billable execution period for both execution modes is 1,000 ms. Past that, the billable activity
 * period is rounded up to the nearest 100 ms."
 */
export const FLEX_MINIMUM_MS = 1_000;
export const FLEX_ROUNDING_MS = 100;

/** A period billed on its own: at least 1 s, then rounded up to 100 ms. */
export function billablePeriodMs(durationMs: number): number {
  if (!(durationMs >= 0)) throw new RangeError(`a duration must be a number >= 0 (got ${durationMs})`);
  return Math.max(FLEX_MINIMUM_MS, Math.ceil(durationMs / FLEX_ROUNDING_MS) * FLEX_ROUNDING_MS);
}

/**
 * Billable active time of ONE instance running these executions: Flex bills memory while the instance executes
 * at least one function, so overlapping executions are billed once. Each execution counts for at least 1 s; each
 * merged activity period is rounded up to 100 ms. This is the busy-instance case (executions overlap as measured).
 */
export function activeInstanceMs(executions: readonly Execution[]): number {
  const spans = executions.map((e) => [e.startMs, e.startMs + Math.max(FLEX_MINIMUM_MS, e.durationMs)] as const).sort((a, b) => a[0] - b[0]);
  let total = 0;
  let open: [number, number] | undefined;
  for (const [start, end] of spans) {
    if (open && start <= open[1]) open[1] = Math.max(open[1], end);
    else {
      if (open) total += billablePeriodMs(open[1] - open[0]);
      open = [start, end];
    }
  }
  if (open) total += billablePeriodMs(open[1] - open[0]);
  return total;
}
