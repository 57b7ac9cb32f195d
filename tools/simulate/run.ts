import type { FaultName, Mutation } from './faults';
import type { InvariantName } from './invariants';
import { runSchedule, type ScheduleResult } from './schedule';

export interface RunOptions {
  readonly firstSeed: number;
  readonly seeds: number;
  readonly payments?: number;
  readonly faults?: readonly FaultName[];
  readonly mutation?: Mutation;
  /** Stop at the first failing seed (default true). */
  readonly stopAtFirst?: boolean;
  /** The world (schedule.ts): 2 by default. */
  readonly world?: 1 | 2;
}

export interface RunReport {
  readonly schedules: number;
  readonly failing: ScheduleResult[];
  readonly byInvariant: Partial<Record<InvariantName, number>>;
  readonly cost: { events: number; storeCalls: number; providerCalls: number; deliveries: number; payments: number };
  readonly elapsedMs: number;
  /** Setting combinations the app refused at start (drawn again: not schedules). */
  readonly refusedAtStart: number;
  /** Schedules per provider profile. */
  readonly profiles: Record<string, number>;
  /** Schedules not run: the app refuses their provider's declared timing at start, whatever else is drawn (per profile). */
  readonly notRun: Record<string, number>;
}

/** Runs `seeds` schedules from `firstSeed`; collects the failing ones (and stops at the first, by default). */
export async function runSeeds(options: RunOptions): Promise<RunReport> {
  const started = performance.now();
  const failing: ScheduleResult[] = [];
  const byInvariant: Partial<Record<InvariantName, number>> = {};
  const cost = { events: 0, storeCalls: 0, providerCalls: 0, deliveries: 0, payments: 0 };
  let schedules = 0;
  let refusedAtStart = 0;
  const profiles: Record<string, number> = {};
  const notRun: Record<string, number> = {};
  for (let seed = options.firstSeed; seed < options.firstSeed + options.seeds; seed++) {
    const result = await runSchedule({ seed, payments: options.payments, faults: options.faults, mutation: options.mutation, world: options.world });
    schedules++;
    refusedAtStart += result.refusedAtStart;
    profiles[result.profile] = (profiles[result.profile] ?? 0) + 1;
    if (result.notRun) notRun[result.profile] = (notRun[result.profile] ?? 0) + 1;
    cost.events += result.cost.events;
    cost.storeCalls += result.cost.storeCalls;
    cost.providerCalls += result.cost.providerCalls;
    cost.deliveries += result.cost.deliveries;
    cost.payments += result.payments;
    if (result.violations.length > 0) {
      failing.push(result);
      for (const v of new Set(result.violations.map((x) => x.invariant))) byInvariant[v] = (byInvariant[v] ?? 0) + 1;
      if (options.stopAtFirst ?? true) break;
    }
  }
  return { schedules, failing, byInvariant, cost, elapsedMs: performance.now() - started, refusedAtStart, profiles, notRun };
}

/**
 * A smaller schedule that still breaks the same invariant: fewer payments first, then each injected fault left out
 * in turn (the seed stays; the schedule it draws changes, so each candidate is run again and kept only if it fails).
 */
export async function shrink(failing: ScheduleResult, mutation?: Mutation): Promise<ScheduleResult> {
  const invariant = failing.violations[0].invariant;
  const breaks = (r: ScheduleResult) => r.violations.some((v) => v.invariant === invariant);
  let best = failing;
  for (let payments = 1; payments < best.payments; payments++) {
    const candidate = await runSchedule({ seed: best.seed, payments, faults: best.faults, mutation, world: best.world });
    if (breaks(candidate)) {
      best = candidate;
      break;
    }
  }
  for (const fault of best.faults) {
    const candidate = await runSchedule({
      seed: best.seed,
      payments: best.payments,
      faults: best.faults.filter((f) => f !== fault),
      mutation,
      world: best.world,
    });
    if (breaks(candidate)) best = candidate;
  }
  return best;
}

/** The command that replays a schedule exactly. */
export function replayCommand(result: ScheduleResult, mutation?: Mutation): string {
  if (result.scenario) return `npm run simulate -- --scenario ${result.scenario} --seed ${result.seed} --trace`;
  const faults = result.faults.length === 0 ? 'none' : result.faults.join(',');
  return `npm run simulate -- --seed ${result.seed} --payments ${result.payments} --faults ${faults}${result.world === 1 ? ' --world 1' : ''}${mutation ? ` --mutate ${mutation}` : ''} --trace`;
}

/** The failing schedule's story: the invariant(s) broken, the steps and faults in order (the last `lines`), the replay. */
export function describeFailure(result: ScheduleResult, mutation?: Mutation, lines = 60): string {
  const start = result.trace[0]?.atMs ?? 0;
  const at = (ms: number) => `+${((ms - start) / 3_600_000).toFixed(3)}h`;
  const injected = result.faults.filter((f) => result.rates[f] > 0).map((f) => `${f}=${result.rates[f]}`);
  return [
    ...result.violations.map((v) => `INVARIANT BROKEN ${v.invariant}: ${v.detail}`),
    `seed ${result.seed}, ${result.payments} payment(s), world ${result.world}, provider ${result.profile}, look-up ${result.lookup}, faults injected: ${injected.join(' ') || 'none'}`,
    ...(result.world === 2
      ? [
          `settings: ${
            Object.entries(result.settings)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ') || 'defaults'
          }`,
        ]
      : []),
    `trace (${Math.min(lines, result.trace.length)} of ${result.trace.length} steps):`,
    ...result.trace.slice(-lines).map((t) => `  ${at(t.atMs)} ${t.text}`),
    `replay: ${replayCommand(result, mutation)}`,
  ].join('\n');
}
