import { optionReader, parseCommandLine, runTool } from '../cli/commandLine';
import { MUTATIONS, parseFaults, type Mutation } from './faults';
import { INVARIANTS } from './invariants';
import { REGRESSION_SEEDS } from './regressions';
import { describeFailure, runSeeds, shrink } from './run';
import { runSchedule } from './schedule';
import { awaitsFixOf, SCENARIO_NAMES, SCENARIOS, type ScenarioName } from './scenarios';

const USAGE = `npm run simulate -- [--seed S] [--seeds N] [--payments M] [--faults a,b|all|none] [--mutate name] [--trace] [--all] [--regressions]

Runs the payments lifecycle (the app's own code) in a seeded simulation under Azure's documented faults
(docs/simulation.md) and checks its invariants on every schedule. A seed replays exactly.
  --seed S        the first seed (default 1)
  --seeds N       how many schedules (default 1 with --seed, else 2000)
  --payments M    payments per schedule (default: 1 to 4, drawn from the seed)
  --faults LIST   the faults a schedule may inject (default all): ${'see docs/simulation.md'}
  --mutate NAME   apply a deliberate mistake the simulator must catch: ${MUTATIONS.join(', ')}
  --trace         print the whole trace of each schedule run
  --all           go on past the first failing seed
  --regressions   run the scenarios and the kept regression seeds also with --seed (without --seed they always run first)
  --scenario NAME a directed schedule of one defect (tools/simulate/scenarios.ts): ${'key-memory, revive-failed'}
  --world 1|2     the world (default 2: provider profiles, drawn settings, producers and operators at every age;
                  1: the world before issue 62, where the kept seeds were found)
Exit 0 when every invariant held, 1 when one broke (the trace and the replay command are printed).`;

runTool('simulate', async () => {
  const values = parseCommandLine(process.argv.slice(2), {
    seed: { type: 'string' },
    seeds: { type: 'string' },
    payments: { type: 'string' },
    faults: { type: 'string' },
    mutate: { type: 'string' },
    trace: { type: 'boolean' },
    all: { type: 'boolean' },
    regressions: { type: 'boolean' },
    scenario: { type: 'string' },
    world: { type: 'string' },
  });
  if (values === 'help') {
    console.log(USAGE);
    return 0;
  }
  const read = optionReader(values);
  const seedGiven = values.seed !== undefined;
  const firstSeed = read.integer('seed', { min: 0, max: 2 ** 31, default: 1 });
  const seeds = read.integer('seeds', { min: 1, max: 10_000_000, default: seedGiven ? 1 : 2_000 });
  const payments = values.payments === undefined ? undefined : read.integer('payments', { min: 1, max: 1_000, default: 1 });
  const mutation = values.mutate === undefined ? undefined : read.choice<Mutation>('mutate', MUTATIONS, MUTATIONS[0]);
  let faults: ReturnType<typeof parseFaults> = [];
  try {
    faults = parseFaults(read.optional('faults'));
  } catch (error) {
    read.problem(error instanceof Error ? error.message : String(error));
  }
  const scenario = values.scenario === undefined ? undefined : read.choice<ScenarioName>('scenario', SCENARIO_NAMES, SCENARIO_NAMES[0]);
  const world = read.integer('world', { min: 1, max: 2, default: 2 }) as 1 | 2;
  read.done();

  if (scenario) {
    const result = await runSchedule({ seed: firstSeed, scenario, mutation });
    console.log(`scenario ${scenario}: ${SCENARIOS[scenario].description}`);
    console.log(
      describeFailure(result, mutation, values.trace ? Number.POSITIVE_INFINITY : 60).replace(
        /^seed/m,
        `${result.violations.length === 0 ? 'no invariant broken; ' : ''}seed`,
      ),
    );
    return result.violations.length === 0 ? 0 : 1;
  }

  let failed = false;
  // The kept schedules first (the scenarios of the defects found, the regression seeds): a few schedules, each of
  // which once broke an invariant. Run unless one seed was asked for (or --regressions asks for them anyway).
  if (values.regressions || !seedGiven) {
    // A kept schedule that awaits the app's fix (found on main's code, issue 62) is reported, not counted: its own test
    // (test/simulation) expects it broken until the fix lands, then the marker goes.
    const report = (label: string, result: Awaited<ReturnType<typeof runSchedule>>, awaitsFix?: string) => {
      const ok = result.violations.length === 0;
      if (!awaitsFix) failed ||= !ok;
      else if (!ok) awaiting++;
      console.log(`${label}: ${ok ? 'holds' : awaitsFix ? `BROKEN, awaits a fix (${awaitsFix})` : 'BROKEN'}`);
      if (!ok) console.log(describeFailure(result, mutation, awaitsFix ? 25 : 60));
    };
    let awaiting = 0;
    for (const name of SCENARIO_NAMES) report(`scenario ${name}`, await runSchedule({ seed: 1, scenario: name, mutation }), awaitsFixOf(SCENARIOS[name]));
    for (const kept of REGRESSION_SEEDS) {
      const result = await runSchedule({ seed: kept.seed, payments: kept.payments, faults: parseFaults(kept.faults), mutation, world: kept.world ?? 1 });
      report(`regression seed ${kept.seed}${kept.world === 2 ? ' (world 2)' : ''} (${kept.found.split(':')[0]})`, result, kept.awaitsFix);
    }
    if (awaiting > 0) console.log(`${awaiting} kept schedule(s) awaiting a fix still broken (not counted)`);
  }
  const report = await runSeeds({ firstSeed, seeds, payments, faults, mutation, stopAtFirst: !values.all, world });
  if (values.trace && seeds === 1) {
    const result = await runSchedule({ seed: firstSeed, payments, faults, mutation, world });
    console.log(
      describeFailure(result, mutation, Number.POSITIVE_INFINITY).replace(/^seed/m, `${result.violations.length === 0 ? 'no invariant broken; ' : ''}seed`),
    );
  }
  const perSecond = report.schedules / (report.elapsedMs / 1000);
  console.log(
    `${report.schedules} schedule(s), ${report.cost.payments} payments, ${report.failing.length} failing; ${perSecond.toFixed(1)} schedules/s; ` +
      `per schedule ${(report.cost.events / report.schedules).toFixed(0)} events, ${(report.cost.storeCalls / report.schedules).toFixed(1)} store calls, ` +
      `${(report.cost.providerCalls / report.schedules).toFixed(1)} provider calls, ${(report.cost.deliveries / report.schedules).toFixed(1)} deliveries; ` +
      `${(report.elapsedMs / report.schedules).toFixed(1)} ms per schedule`,
  );
  console.log(
    `world ${world}: ${report.refusedAtStart} setting combination(s) refused at start (drawn again); profiles ${Object.entries(report.profiles)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ')}`,
  );
  const notRun = Object.entries(report.notRun);
  if (notRun.length > 0)
    console.log(
      `not run (the app refuses the provider's declared timing at start, whatever else is drawn): ${notRun.map(([name, n]) => `${name} ${n}`).join(', ')}`,
    );
  for (const [name, count] of Object.entries(report.byInvariant)) console.log(`  ${name} (${INVARIANTS[name as keyof typeof INVARIANTS]}): ${count} seed(s)`);
  // With --all, every failing seed and what it broke, so each can be replayed (and kept) without running the batch again.
  if (values.all && report.failing.length > 0)
    console.log(`failing seeds: ${report.failing.map((r) => `${r.seed} (${r.violations.map((v) => v.invariant).join(', ')})`).join(', ')}`);
  const first = report.failing[0];
  if (first) {
    failed = true;
    const small = await shrink(first, mutation);
    console.log(describeFailure(small, mutation));
  }
  return failed ? 1 : 0;
});
