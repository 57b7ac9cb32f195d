/**
 * The seeded simulation of the payments lifecycle (tools/simulate, docs/simulation.md) in CI: a fixed budget of
 * schedules under every fault in the catalogue, after the directed scenarios and the regression seeds (each once broke
 * an invariant), and the deliberate mistakes the simulator must catch. A schedule's outcome depends on its seed only,
 * never on the machine: the test judges invariants, not time.
 *
 * It runs `npm run simulate`'s own program, compiled (the same `tsconfig.tools.json` compilation the real-engine tests
 * use), in a child process: inside Jest's module sandbox the simulation ran about 50 times slower (20 schedules took
 * 47-84 s against 1.5 s in plain Node), which would make the CI budget a matter of machine speed.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { builtApp } from '../../tools/durable-host/hostBuild';
import { MUTATION_SEEDS, REGRESSION_SEEDS } from '../../tools/simulate/regressions';
import { awaitsFixOf, SCENARIO_NAMES, SCENARIOS } from '../../tools/simulate/scenarios';

/** Schedules per CI run (issue 42: at least 2,000). */
const CI_SCHEDULES = 2_000;

let main: string;
beforeAll(() => {
  main = join(builtApp(), 'tools', 'simulate', 'main.js');
}, 600_000);

function simulate(args: readonly string[]): { code: number | null; out: string } {
  const run = spawnSync(process.execPath, [main, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { code: run.status, out: `${run.stdout}${run.stderr}` };
}

/**
 * Kept schedules found on main's code by issue 62's world and not fixed yet (`awaitsFix`): `npm run simulate` reports
 * them without failing; each has a test below that expects it to hold and is marked `test.failing` until the fix lands
 * (then the test fails: remove the `awaitsFix` marker, and it is an ordinary regression).
 */
const AWAITING = [
  ...SCENARIO_NAMES.filter((name) => awaitsFixOf(SCENARIOS[name])).map((name) => ({
    label: `scenario ${name}`,
    args: ['--scenario', name],
    why: awaitsFixOf(SCENARIOS[name])!,
  })),
  ...REGRESSION_SEEDS.filter((kept) => kept.awaitsFix).map((kept) => ({
    label: `regression seed ${kept.seed} (world ${kept.world ?? 1})`,
    args: [
      '--seed',
      String(kept.seed),
      '--faults',
      kept.faults,
      '--world',
      String(kept.world ?? 1),
      ...(kept.payments ? ['--payments', String(kept.payments)] : []),
    ],
    why: kept.awaitsFix!,
  })),
];

describe('simulation of the payments lifecycle', () => {
  let budget: { code: number | null; out: string };
  beforeAll(() => {
    budget = simulate(['--seeds', String(CI_SCHEDULES), '--all']);
    console.log(
      budget.out
        .split('\n')
        .filter((line) => !line.startsWith('  +'))
        .slice(0, 40)
        .join('\n'),
    );
  }, 1_200_000);

  test('the scenarios and the regression seeds: every invariant holds (those awaiting a fix reported apart)', () => {
    for (const name of SCENARIO_NAMES) expect(budget.out).toMatch(new RegExp(`^scenario ${name}: (holds|BROKEN, awaits a fix)`, 'm'));
    for (const kept of REGRESSION_SEEDS) expect(budget.out).toContain(`regression seed ${kept.seed}`);
    expect(budget.out).not.toMatch(/: BROKEN$/m);
  });

  // World 2 (provider profiles, settings drawn from the schema's ranges, producers, operators): every invariant holds
  // over the CI budget (docs/simulation.md "World 2").
  test(`${CI_SCHEDULES} schedules of world 2 under the fault catalogue: every invariant holds`, () => {
    expect(budget.out).toMatch(new RegExp(`^${CI_SCHEDULES} schedule\\(s\\), \\d+ payments, 0 failing;`, 'm'));
    expect(budget.code).toBe(0);
  });

  // None is awaiting a fix today (jest refuses an empty table): a schedule found and kept before its fix lands is listed here.
  if (AWAITING.length > 0)
    test.failing.each(AWAITING.map((a) => [a.label, a.why, a.args]))(
      '%s holds (awaits the fix: %s)',
      (_label, _why, args) => {
        const run = simulate(args);
        expect(run.out).not.toContain('INVARIANT BROKEN');
        expect(run.code).toBe(0);
      },
      600_000,
    );

  test.each(MUTATION_SEEDS.map((m) => [m.mutation, m.breaks, m]))(
    'the deliberate mistake %s is caught (%s), with its replay command',
    (_name, _breaks, kept) => {
      const args = ['--seed', String(kept.seed), '--faults', kept.faults, '--world', String(kept.world)];
      const mutated = simulate([...args, '--mutate', kept.mutation]);
      expect(mutated.code).toBe(1);
      expect(mutated.out).toContain(`INVARIANT BROKEN ${kept.breaks}`);
      expect(mutated.out).toMatch(/replay: npm run simulate -- --seed \d+ .*--mutate /);
      // The same schedule without the mistake does not break that invariant: it broke because of the mistake.
      expect(simulate(args).out).not.toContain(`INVARIANT BROKEN ${kept.breaks}`);
    },
    600_000,
  );

  test('a bad command line is refused with a usage error (exit 2), not run', () => {
    const { code, out } = simulate(['--faults', 'no-such-fault']);
    expect(code).toBe(2);
    expect(out).toMatch(/unknown fault no-such-fault/);
  }, 600_000);
});
