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
import { SCENARIO_NAMES } from '../../tools/simulate/scenarios';

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

describe('simulation of the payments lifecycle', () => {
  test(`the scenarios, the regression seeds and ${CI_SCHEDULES} schedules under the fault catalogue: every invariant holds`, () => {
    const { code, out } = simulate(['--seeds', String(CI_SCHEDULES), '--all']);
    console.log(out.split('\n').slice(0, 12).join('\n'));
    for (const name of SCENARIO_NAMES) expect(out).toContain(`scenario ${name}: holds`);
    for (const kept of REGRESSION_SEEDS) expect(out).toContain(`regression seed ${kept.seed} (`);
    expect(out).not.toMatch(/BROKEN/);
    expect(out).toMatch(new RegExp(`^${CI_SCHEDULES} schedule\\(s\\), \\d+ payments, 0 failing;`, 'm'));
    expect(code).toBe(0);
  }, 1_200_000);

  test.each(MUTATION_SEEDS.map((m) => [m.mutation, m.breaks, m]))(
    'the deliberate mistake %s is caught (%s), with its replay command',
    (_name, _breaks, kept) => {
      const args = ['--seed', String(kept.seed), '--faults', kept.faults];
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
