/**
 * test/support/leftIntervals.ts: an interval a test file left running is stopped when the next file starts in that
 * worker (an AAD CosmosClient's 5-minute endpoint refresh asked 169.254.169.254 for a token in whatever file ran five
 * minutes later). Two fixture files in one jest process, in name order: the first leaves an interval ticking, the
 * second checks that it no longer ticks. Without the setup file the same pair fails: the check can fail.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const FIXTURES = path.join(ROOT, 'test', 'support', 'leftIntervalsFixture');

function runFixtures(setupFiles: string[]) {
  const result = spawnSync(
    process.execPath,
    [
      path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
      '--config',
      path.join(ROOT, 'jest.config.js'),
      '--roots',
      FIXTURES,
      '--testMatch',
      '**/*.fixture.ts',
      '--testSequencer',
      path.join(FIXTURES, 'alphabetical.js'),
      '--runInBand',
      '--ci',
      '--forceExit',
      '--setupFilesAfterEnv',
      ...setupFiles.map((f) => path.join(ROOT, 'test', 'support', f)),
    ],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, CI: 'true' }, timeout: 240_000 },
  );
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('leftIntervals', () => {
  test('the interval the first file left is stopped before the second file runs, and named once (a cleared one is not counted)', () => {
    const run = runFixtures(['loopbackOnly.ts', 'leftIntervals.ts']);
    expect(run.output).toMatch(/Tests:\s+2 passed, 2 total/);
    expect(run.status).toBe(0);
    const lines = run.output.split('\n').filter((l) => l.startsWith('leftIntervals:'));
    expect(lines).toEqual([expect.stringMatching(/^leftIntervals: stopped 1 interval\(s\) .*a\.fixture\.ts left running$/)]);
  }, 300_000);

  test('without it the second file sees the interval still ticking', () => {
    const run = runFixtures(['loopbackOnly.ts']);
    expect(run.output).toMatch(/Tests:\s+1 failed, 1 passed, 2 total/);
    expect(run.output).toContain('the interval the previous file left no longer runs');
    expect(run.status).toBe(1);
  }, 300_000);
});
