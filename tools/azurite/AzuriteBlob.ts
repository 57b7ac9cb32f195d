import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from './AzuriteTable';

const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const EXIT_WITH_PARENT =
  "process.stdin.on('end', () => process.exit(0)); process.stdin.on('error', () => process.exit(0)); process.stdin.resume(); require(process.argv[1]);";

/**
 * An Azurite Blob service in memory on a loopback port (the local Event Hubs' checkpoint store, as the
 * Functions host keeps its Event Hubs checkpoints in blobs). Start it, use it, stop it; it exits with its parent.
 */
export class AzuriteBlob {
  private constructor(
    readonly port: number,
    private child: ChildProcess | undefined,
  ) {}

  static async start(port?: number): Promise<AzuriteBlob> {
    const chosen = port ?? (await freePort());
    const main = path.join(require.resolve('azurite/package.json'), '..', 'dist', 'src', 'blob', 'main.js');
    const child = spawn(
      process.execPath,
      [
        '-e',
        EXIT_WITH_PARENT,
        main,
        '--blobHost',
        '127.0.0.1',
        '--blobPort',
        String(chosen),
        '--inMemoryPersistence',
        '--disableTelemetry',
        '--silent',
        '--skipApiVersionCheck',
      ],
      { stdio: ['pipe', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += String(d)));
    const instance = new AzuriteBlob(chosen, child);
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`azurite blob exited with ${child.exitCode}: ${stderr}`);
      try {
        await fetch(`http://127.0.0.1:${chosen}/${DEV_ACCOUNT}?comp=list`, { signal: AbortSignal.timeout(1000) });
        return instance;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await instance.stop();
    throw new Error(`azurite blob did not answer on port ${chosen} within 20 s: ${stderr}`);
  }

  get connectionString(): string {
    return `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};BlobEndpoint=http://127.0.0.1:${this.port}/${DEV_ACCOUNT};`;
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }
}
