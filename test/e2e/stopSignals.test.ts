import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REAL_ENGINE_TIMEOUT_MS } from '../support/realEngine';

/**
 * Clean stops, on real processes: the demo and the bench are started as child processes (compiled
 * into dist/test-tools, apart from `npm run build`'s dist/src), a signal is sent to that process
 * only (not to its group, as `kill <pid>` does), and no process it started may remain afterwards.
 * Linux only (children are read from /proc). The demo runs on the real Durable engine, as always: it may
 * first wait for the machine-wide port lock and a host start (the host registers its stop with the same
 * signal handling, and ends when its parent's pipe closes). A small run (2,000 messages, no time phase)
 * is stopped once it settles its first messages.
 */

const ROOT = join(__dirname, '..', '..');
const OUT = join(ROOT, 'dist', 'test-tools');
const linux = process.platform === 'linux' && existsSync('/proc/self/stat');
const maybe = linux ? describe : describe.skip;

/** Pids whose parent is `pid` (from /proc/<pid>/stat, field 4). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid) out.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

/** True while `pid` exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

/** Starts a tool and waits until its stderr shows `ready` (by then it has started its children). */
async function startTool(script: string, args: string[], ready: RegExp, readyWithinMs = 60_000): Promise<{ child: ChildProcess; stderr: () => string }> {
  const child = spawn(process.execPath, [join(OUT, script), ...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  const ok = await waitFor(() => ready.test(stderr) || child.exitCode !== null, readyWithinMs);
  if (!ok || child.exitCode !== null) throw new Error(`${script} did not get ready: ${stderr}`);
  return { child, stderr: () => stderr };
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** A bounded demo run on the real engine (the only one it has). */
const DEMO_ARGS = ['--messages', '2000', '--time-phase', 'off'];

maybe('SIGINT and SIGTERM stop everything the tools started', () => {
  beforeAll(() => {
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        join(ROOT, 'tsconfig.tools.json'),
        '--outDir',
        OUT,
        '--tsBuildInfoFile',
        `${OUT}.tsbuildinfo`,
      ],
      { cwd: ROOT, stdio: 'inherit' },
    );
  }, 240_000);

  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)(
    'the demo on %s: stops Azurite, exits %i',
    async (signal, code) => {
      const { child, stderr } = await startTool('tools/demo/main.js', DEMO_ARGS, /settled \d+\//, REAL_ENGINE_TIMEOUT_MS);
      const started = childrenOf(child.pid!);
      expect(started.length).toBeGreaterThanOrEqual(1); // Azurite
      child.kill(signal);
      const result = await exited(child);
      expect(result).toEqual({ code, signal: null });
      expect(stderr()).toMatch(new RegExp(`demo: ${signal} received, stopping \\d+ thing\\(s\\) it started`));
      expect(await waitFor(() => started.every((pid) => !alive(pid)), 60_000)).toBe(true);
    },
    REAL_ENGINE_TIMEOUT_MS,
  );

  it('the bench on SIGTERM: stops Azurite, exits 143', async () => {
    const { child, stderr } = await startTool('tools/bench/main.js', ['--messages', '100000'], /round trips per message/);
    const started = childrenOf(child.pid!);
    expect(started.length).toBeGreaterThanOrEqual(1);
    child.kill('SIGTERM');
    expect(await exited(child)).toEqual({ code: 143, signal: null });
    expect(stderr()).toMatch(/bench: SIGTERM received/);
    expect(await waitFor(() => started.every((pid) => !alive(pid)), 5_000)).toBe(true);
  }, 90_000);

  it(
    'the demo killed outright (SIGKILL, no handler runs): Azurite still exits with it',
    async () => {
      const { child } = await startTool('tools/demo/main.js', DEMO_ARGS, /settled \d+\//, REAL_ENGINE_TIMEOUT_MS);
      const started = childrenOf(child.pid!);
      expect(started.length).toBeGreaterThanOrEqual(1);
      child.kill('SIGKILL');
      await exited(child);
      expect(await waitFor(() => started.every((pid) => !alive(pid)), 60_000)).toBe(true);
    },
    REAL_ENGINE_TIMEOUT_MS,
  );
});
