import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { whenStopped } from '../cli/stopSignals';
import { STALL_WATCH_SOURCE, StallLog, type Stall } from './stallWatch';

/** Account name and key Azurite accepts (public, documented development credentials). */
const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/** A free TCP port on loopback, chosen by the OS. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Runs Azurite's main module (argv[1]) and exits when stdin ends: the parent holds the other end of
 * that pipe, so Azurite stops with the tool even when the tool is killed without a chance to stop it.
 */
const EXIT_WITH_PARENT =
  "process.stdin.on('end', () => process.exit(0)); process.stdin.on('error', () => process.exit(0)); process.stdin.resume(); require(process.argv[1]);";

/**
 * An Azurite Table service in memory on a loopback port; start it, use it, stop it.
 * Used by the integration tests (through test/support/azurite.ts) and by the benchmark.
 */
export class AzuriteTable {
  private child: ChildProcess | undefined;
  private unregister: (() => void) | undefined;
  private readonly stallLog = new StallLog();

  private constructor(readonly port: number) {}

  /** Starts Azurite's Table service on a free loopback port and waits until it answers. */
  static async start(port?: number): Promise<AzuriteTable> {
    const instance = new AzuriteTable(port ?? (await freePort()));
    await instance.restart();
    return instance;
  }

  /** Connection string for `TableClient.fromConnectionString` (needs `allowInsecureConnection`). */
  get connectionString(): string {
    return `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};` + `TableEndpoint=http://127.0.0.1:${this.port}/${DEV_ACCOUNT};`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Pauses of 200 ms or more of this Azurite's event loop that began at or after `sinceMs` (epoch). */
  stalls(sinceMs: number): Stall[] {
    return this.stallLog.since(sinceMs);
  }

  /** Process id of the running Azurite (e.g. to read its CPU time), or undefined when stopped. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** (Re)starts the process on the same port. State is lost: Azurite runs in memory. */
  async restart(): Promise<void> {
    if (this.child) return;
    const main = path.join(require.resolve('azurite/package.json'), '..', 'dist', 'src', 'table', 'main.js');
    const child = spawn(
      process.execPath,
      [
        '-e',
        EXIT_WITH_PARENT + STALL_WATCH_SOURCE,
        main,
        '--tableHost',
        '127.0.0.1',
        '--tablePort',
        String(this.port),
        '--inMemoryPersistence',
        '--disableTelemetry',
        '--silent',
        '--skipApiVersionCheck',
      ],
      { stdio: ['pipe', 'ignore', 'pipe'] },
    );
    this.child = child;
    // A signal to the tool (SIGINT, SIGTERM) stops this process too (tools/cli/stopSignals.ts).
    this.unregister = whenStopped(() => this.stop());
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += this.stallLog.take(String(d))));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`azurite exited with ${child.exitCode}: ${stderr}`);
      if (await this.answers()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    await this.stop();
    throw new Error(`azurite did not answer on port ${this.port} within 20 s: ${stderr}`);
  }

  private async answers(): Promise<boolean> {
    try {
      await fetch(`http://127.0.0.1:${this.port}/${DEV_ACCOUNT}/Tables`, { signal: AbortSignal.timeout(1000) });
      return true;
    } catch {
      return false;
    }
  }

  /** Stops the process and waits for it to exit (the port is closed afterwards). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    this.unregister?.();
    this.unregister = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }
}
