/**
 * rpcPortClaim: the port a locked Durable host is about to take, made free. A Durable host left listening there (an
 * orphan: the lock's holder owns the port) is killed and named with its task hub; anything else fails the start with
 * its pid and command line, instead of letting the host listen elsewhere while clients of the port reach that
 * process (a CI bench run charged nothing for 20 minutes). Real processes on a free loopback port; Linux only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { claimRpcPort, isDurableHost, listenersOn, portFree } from '../../tools/local/durable/rpcPortClaim';
import { freePort } from '../support/azurite';

const linux = process.platform === 'linux' && existsSync('/proc/net/tcp');
const maybe = linux ? describe : describe.skip;

/** A Node process listening on `port`; its command line ends with `extraArg` (a host's DLL name, or not). */
async function listener(port: number, extraArg: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const script = `require('net').createServer((s) => s.destroy()).listen(${port}, '127.0.0.1', () => console.log('up'))`;
  const child = spawn(process.execPath, ['-e', script, extraArg], { detached: true, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`listener exited ${code}`)));
  });
  return child;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r()));

maybe('claimRpcPort', () => {
  const started: ChildProcess[] = [];
  afterEach(() => {
    for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  test('a free port is left alone: nothing killed, nothing waited for', async () => {
    const port = await freePort();
    const lines: string[] = [];
    await expect(claimRpcPort(port, { settleMs: 0, log: (l) => lines.push(l) })).resolves.toEqual([]);
    expect(lines).toEqual([]);
    expect(await portFree(port)).toBe(true);
  });

  test('an orphaned Durable host on the port is killed with its process group and named with its task hub; the port is free after', async () => {
    const port = await freePort();
    const orphan = await listener(port, '/somewhere/bin/Release/net10.0/DurableHost.dll', { DURABLE_TASK_HUB_NAME: 'benchholdx1y2z' });
    started.push(orphan);
    const seen = listenersOn(port);
    expect(seen.map((l) => l.pid)).toEqual([orphan.pid]);
    expect(isDurableHost(seen[0])).toBe(true);

    const lines: string[] = [];
    const killed = await claimRpcPort(port, { settleMs: 0, log: (l) => lines.push(l) });
    expect(killed.map((l) => [l.pid, l.hubName])).toEqual([[orphan.pid, 'benchholdx1y2z']]);
    await exited(orphan);
    expect(orphan.signalCode).toBe('SIGKILL');
    expect(await portFree(port)).toBe(true);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`pid ${orphan.pid}, task hub benchholdx1y2z`);
  });

  test('any other process on the port fails the claim with its pid and command line, and is left running', async () => {
    const port = await freePort();
    const other = await listener(port, 'NotDurableHost.dll.bak');
    started.push(other);
    expect(isDurableHost(listenersOn(port)[0])).toBe(false);
    await expect(claimRpcPort(port, { settleMs: 0 })).rejects.toThrow(
      new RegExp(`port ${port} is taken by pid ${other.pid} \\(.*NotDurableHost\\.dll\\.bak\\)`),
    );
    expect(other.exitCode).toBeNull();
    expect(await portFree(port)).toBe(false);
  });

  test('a host that is still stopping is waited for, not killed: the port frees itself within the settle time', async () => {
    const port = await freePort();
    const stopping = await listener(port, 'DurableHost.dll');
    started.push(stopping);
    setTimeout(() => stopping.kill('SIGTERM'), 300);
    const lines: string[] = [];
    await expect(claimRpcPort(port, { settleMs: 20_000, log: (l) => lines.push(l) })).resolves.toEqual([]);
    await exited(stopping);
    expect(stopping.signalCode).toBe('SIGTERM');
    expect(lines).toEqual([]);
  });
});
