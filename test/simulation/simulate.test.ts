/**
 * The seeded simulation of the payments lifecycle (tools/simulate, docs/simulation.md) in CI: a fixed budget of
 * schedules under every fault in the catalogue, the directed scenarios and the regression seeds (each once broke an
 * invariant), and the deliberate mistakes the simulator must catch. A schedule's outcome
 * depends on its seed only, never on the machine: the test judges invariants, not time.
 */
import { FAULT_NAMES, parseFaults } from '../../tools/simulate/faults';
import { MUTATION_SEEDS, REGRESSION_SEEDS } from '../../tools/simulate/regressions';
import { describeFailure, runSeeds } from '../../tools/simulate/run';
import { runSchedule } from '../../tools/simulate/schedule';
import { SCENARIO_NAMES } from '../../tools/simulate/scenarios';

/** Schedules per CI run (issue 42: at least 2,000). */
const CI_SCHEDULES = 2_000;

describe('simulation of the payments lifecycle', () => {
  test(`${CI_SCHEDULES} schedules under the fault catalogue: every invariant holds`, async () => {
    const report = await runSeeds({ firstSeed: 1, seeds: CI_SCHEDULES, faults: FAULT_NAMES, stopAtFirst: false });
    console.log(
      `simulate: ${report.schedules} schedules, ${report.cost.payments} payments, ${report.failing.length} failing, ${(report.schedules / (report.elapsedMs / 1000)).toFixed(1)} schedules/s, ` +
        `${(report.cost.events / report.schedules).toFixed(0)} events and ${(report.cost.storeCalls / report.schedules).toFixed(1)} store calls a schedule`,
    );
    expect(report.schedules).toBe(CI_SCHEDULES);
    expect(report.failing.map((f) => describeFailure(f, undefined, 30))).toEqual([]);
  }, 1_200_000);

  test.each(SCENARIO_NAMES)('scenario %s (a defect the review found, directed) holds', async (name) => {
    const result = await runSchedule({ seed: 1, scenario: name });
    expect(result.violations.length === 0 ? [] : [describeFailure(result)]).toEqual([]);
  });

  test.each(REGRESSION_SEEDS.map((r) => [r.seed, r.faults, r]))('regression seed %i (faults %s) holds', async (_seed, _faults, kept) => {
    const result = await runSchedule({ seed: kept.seed, payments: kept.payments, faults: parseFaults(kept.faults) });
    expect(result.violations.length === 0 ? [] : [describeFailure(result)]).toEqual([]);
  });

  test.each(MUTATION_SEEDS.map((m) => [m.mutation, m.breaks, m]))('the deliberate mistake %s is caught (%s)', async (_name, _breaks, kept) => {
    const mutation = kept.mutation;
    const result = await runSchedule({ seed: kept.seed, faults: parseFaults(kept.faults), mutation });
    expect(result.violations.map((v) => v.invariant)).toContain(kept.breaks);
    // The same schedule without the mistake holds: the invariant broke because of it.
    const clean = await runSchedule({ seed: kept.seed, faults: parseFaults(kept.faults) });
    expect(clean.violations.filter((v) => v.invariant === kept.breaks)).toEqual([]);
  });
});
