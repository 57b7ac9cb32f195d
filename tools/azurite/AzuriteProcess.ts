import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { whenStopped } from '../cli/stopSignals';
import { STALL_WATCH_SOURCE, StallLog, type Stall } from './stallWatch';

/** Account name and key Azurite accepts (public, documented development credentials). */
const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/**
 * Runs Azurite's main module (argv[1]) and exits when stdin ends: the parent holds the other end of
 * that pipe, so Azurite stops with the tool even when the tool is killed without a chance to stop it.
 */
const EXIT_WITH_PARENT =
  "process.stdin.on('end', () => process.exit(0)); process.stdin.on('error', () => process.exit(0)); process.stdin.resume(); require(process.argv[1]);";

export type AzuriteService = 'blob' | 'queue' | 'table';
const SERVICES: readonly AzuriteService[] = ['blob', 'queue', 'table'];
const ENDPOINT: Record<AzuriteService, string> = { blob: 'BlobEndpoint', queue: 'QueueEndpoint', table: 'TableEndpoint' };
/** A request each service answers once it is up. */
const PROBE: Record<AzuriteService, string> = { blob: '?comp=list', queue: '?comp=list', table: '/Tables' };

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
 * Azurite in memory on loopback ports, one process for the services given (one service: its own main module;
 * several: Azurite's main, `--loose`). A signal to the tool (SIGINT, SIGTERM) stops it too (tools/cli/stopSignals.ts).
 */
export class AzuriteProcess {
  private child: ChildProcess | undefined;
  private unregister: (() => void) | undefined;
  private readonly stallLog = new StallLog();

  /** `prelude`: JavaScript run in the child before Azurite's main module. */
  protected constructor(
    protected readonly ports: Readonly<Partial<Record<AzuriteService, number>>>,
    private readonly prelude = '',
  ) {}

  /** Connection string with explicit loopback endpoints (clients need `allowInsecureConnection`). */
  get connectionString(): string {
    const endpoints = this.services.map((s) => `${ENDPOINT[s]}=http://127.0.0.1:${this.ports[s]}/${DEV_ACCOUNT};`).join('');
    return `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};${endpoints}`;
  }

  /** Process id of the running Azurite (e.g. to read its CPU time), or undefined when stopped. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Pauses of 200 ms or more of this Azurite's event loop that began at or after `sinceMs` (epoch). */
  stalls(sinceMs: number): Stall[] {
    return this.stallLog.since(sinceMs);
  }

  /** (Re)starts the process on the same ports and waits until every service answers. State is lost: it runs in memory. */
  async restart(): Promise<void> {
    if (this.child) return;
    const services = this.services;
    const dist = path.join(require.resolve('azurite/package.json'), '..', 'dist', 'src');
    const main = services.length === 1 ? path.join(dist, services[0], 'main.js') : path.join(dist, 'azurite.js');
    const args = services.flatMap((s) => [`--${s}Host`, '127.0.0.1', `--${s}Port`, String(this.ports[s])]);
    if (services.length > 1) args.push('--loose');
    args.push('--inMemoryPersistence', '--disableTelemetry', '--silent', '--skipApiVersionCheck');
    const child = spawn(process.execPath, ['-e', STALL_WATCH_SOURCE + this.prelude + EXIT_WITH_PARENT, main, ...args], { stdio: ['pipe', 'ignore', 'pipe'] });
    this.child = child;
    this.unregister = whenStopped(() => this.stop());
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += this.stallLog.take(String(d))));
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`azurite (${services.join(', ')}) exited with ${child.exitCode}: ${stderr}`);
      if (await this.answers()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    await this.stop();
    throw new Error(`azurite (${services.join(', ')}) did not answer within 30 s: ${stderr}`);
  }

  /** Stops the process and waits for it to exit (its ports are closed afterwards). */
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

  private get services(): AzuriteService[] {
    return SERVICES.filter((s) => this.ports[s] !== undefined);
  }

  private async answers(): Promise<boolean> {
    for (const s of this.services) {
      try {
        await fetch(`http://127.0.0.1:${this.ports[s]}/${DEV_ACCOUNT}${PROBE[s]}`, { signal: AbortSignal.timeout(1000) });
      } catch {
        return false;
      }
    }
    return true;
  }
}
