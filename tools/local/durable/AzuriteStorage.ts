import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../../azurite/AzuriteTable';
import { STALL_WATCH_SOURCE, StallLog, type Stall } from '../../azurite/stallWatch';
import { whenStopped } from '../../cli/stopSignals';

const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const EXIT_WITH_PARENT =
  "process.stdin.on('end', () => process.exit(0)); process.stdin.on('error', () => process.exit(0)); process.stdin.resume(); require(process.argv[1]);";
/**
 * Before Azurite's main (`process.argv[1]`, `dist/src/azurite.js`) builds its servers: its queue and blob services'
 * sweeps of deleted data run once a day instead of every 60 s (queue) and 10 min (blob). The queue sweep removes the
 * extent of every message deleted since the last one without yielding its event loop, in time that grows with the
 * square of their number: 5,000 deleted messages paused this Azurite 37.9 s, and a Durable task hub deletes 9
 * messages a payment. What is not swept stays in memory (about the size of the messages) until the process ends.
 */
export const RARE_GC_SWEEPS =
  "for (const service of ['queue', 'blob']) require(require('path').join(require('path').dirname(process.argv[1]), service, 'utils', 'constants.js')).DEFAULT_GC_INTERVAL_MS = 86400000;";

/**
 * Azurite with its blob, queue and table services in memory on free loopback ports: the storage account of a
 * Durable task hub (the Azure Storage provider keeps leases in blobs, work items in queues, history and
 * instances in tables). `AzuriteTable` (table service only) is enough for the idempotency store.
 */
export class AzuriteStorage {
  private child: ChildProcess | undefined;
  private unregister: (() => void) | undefined;
  private readonly stallLog = new StallLog();

  private constructor(private readonly ports: { blob: number; queue: number; table: number }) {}

  static async start(): Promise<AzuriteStorage> {
    const storage = new AzuriteStorage({ blob: await freePort(), queue: await freePort(), table: await freePort() });
    await storage.launch();
    return storage;
  }

  /** The `AzureWebJobsStorage` connection string (explicit endpoints on loopback). */
  get connectionString(): string {
    const at = (port: number) => `http://127.0.0.1:${port}/${DEV_ACCOUNT}`;
    return (
      `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};` +
      `BlobEndpoint=${at(this.ports.blob)};QueueEndpoint=${at(this.ports.queue)};TableEndpoint=${at(this.ports.table)};`
    );
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Pauses of 200 ms or more of this Azurite's event loop that began at or after `sinceMs` (epoch). */
  stalls(sinceMs: number): Stall[] {
    return this.stallLog.since(sinceMs);
  }

  private async launch(): Promise<void> {
    const main = path.join(require.resolve('azurite/package.json'), '..', 'dist', 'src', 'azurite.js');
    const { blob, queue, table } = this.ports;
    // prettier-ignore
    const args = ['--inMemoryPersistence', '--disableTelemetry', '--silent', '--skipApiVersionCheck', '--loose',
      '--blobHost', '127.0.0.1', '--blobPort', String(blob), '--queueHost', '127.0.0.1', '--queuePort', String(queue),
      '--tableHost', '127.0.0.1', '--tablePort', String(table)];
    const child = spawn(process.execPath, ['-e', STALL_WATCH_SOURCE + RARE_GC_SWEEPS + EXIT_WITH_PARENT, main, ...args], { stdio: ['pipe', 'ignore', 'pipe'] });
    this.child = child;
    this.unregister = whenStopped(() => this.stop());
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += this.stallLog.take(String(d))));
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`azurite exited with ${child.exitCode}: ${stderr}`);
      if (await this.answers()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    await this.stop();
    throw new Error(`azurite (blob, queue, table) did not answer within 30 s: ${stderr}`);
  }

  private async answers(): Promise<boolean> {
    const ok = async (port: number, route: string) => {
      try {
        await fetch(`http://127.0.0.1:${port}/${DEV_ACCOUNT}${route}`, { signal: AbortSignal.timeout(1000) });
        return true;
      } catch {
        return false;
      }
    };
    return (await ok(this.ports.table, '/Tables')) && (await ok(this.ports.queue, '?comp=list')) && (await ok(this.ports.blob, '?comp=list'));
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    this.unregister?.();
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }
}
