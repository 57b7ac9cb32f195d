import { spawn } from 'node:child_process';
import { STALL_WATCH_SOURCE, StallLog, watchStalls } from '../../tools/azurite/stallWatch';

/** Blocks this thread for `ms` (a synchronous pause of the event loop). */
function block(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    /* busy */
  }
}

describe('stall watch: pauses of a process event loop, to name the dependency that paused', () => {
  test('a child running the watch reports a 400 ms synchronous pause on stderr; its other output is passed on', async () => {
    const script = `${STALL_WATCH_SOURCE} setTimeout(() => { const t = Date.now(); while (Date.now() - t < 400) {} process.stderr.write('other line\\n'); setTimeout(() => {}, 100); }, 100);`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    const log = new StallLog();
    let passed = '';
    child.stderr.on('data', (d) => (passed += log.take(String(d))));
    const startedAtMs = Date.now();
    await new Promise((resolve) => child.once('exit', resolve));
    const stalls = log.since(startedAtMs - 1_000);
    expect(stalls.length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...stalls.map((s) => s.ms))).toBeGreaterThanOrEqual(300);
    expect(passed).toBe('other line\n');
  });

  test('stall lines split across chunks are parsed whole; anything else is returned; since() filters by start', () => {
    const log = new StallLog();
    expect(log.take('STALL 1000 2')).toBe('');
    expect(log.take('50\nazurite said something\nSTA')).toBe('azurite said something\n');
    expect(log.take('LL 5000 300\n')).toBe('');
    expect(log.take('partial err')).toBe('partial err\n');
    expect(log.since(0)).toEqual([
      { atMs: 1000, ms: 250 },
      { atMs: 5000, ms: 300 },
    ]);
    expect(log.since(2000)).toEqual([{ atMs: 5000, ms: 300 }]);
  });

  test('in this process: a 400 ms pause is recorded; short ones are not', async () => {
    const log = new StallLog();
    const stop = watchStalls(log);
    try {
      await new Promise((r) => setTimeout(r, 60));
      block(400);
      await new Promise((r) => setTimeout(r, 60));
    } finally {
      stop();
    }
    expect(log.since(0).some((s) => s.ms >= 300)).toBe(true);
  });
});
