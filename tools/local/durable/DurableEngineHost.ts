import { spawn, type ChildProcess } from 'node:child_process';
import { unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { whenStopped } from '../../cli/stopSignals';
import { acquirePortLock } from '../../cli/lockFile';
import { REPO_ROOT } from '../../cli/repoRoot';
import { ensureDurableHostBuilt, builtApp } from '../../durable-host/hostBuild';
import { claimRpcPort } from './rpcPortClaim';
/** The host's build, kept importable from here (its home is tools/durable-host/hostBuild.ts). */
export { builtApp, dotnetAvailable } from '../../durable-host/hostBuild';

/** The extension's local RPC endpoint port: fixed (LocalHttpListener), so one host per machine at a time. */
export const DURABLE_RPC_PORT = 17071;

export interface DurableEngineHostOptions {
  /** The task hub's storage account (`AzureWebJobsStorage`): `AzuriteStorage.connectionString`. */
  readonly storageConnectionString: string;
  /** `DURABLE_TASK_HUB_NAME` (host.json's hubName is `%DURABLE_TASK_HUB_NAME%`). */
  readonly hubName: string;
  /** App settings for the app's code in the bridge (the provider URL, ...), as the Functions host passes them. */
  readonly appSettings: Readonly<Record<string, string>>;
  /** Entry files of the built app, relative to it; default the payments registrations. */
  readonly entries?: readonly string[];
  /** Laid over host.json's `extensions.durableTask` (same shape): tests and the demo scale time with it. */
  readonly overrides?: Readonly<Record<string, unknown>>;
  /** Receives the host's log lines (warnings and errors of the extension, the app's stderr). */
  readonly log?: (line: string) => void;
  /** `worker` (default) runs the hub's Durable functions; `client` only serves the durableClient's HTTP API (docs/durable.md). */
  readonly role?: DurableHostRole;
  /** The host.json the host applies (default: the repository's); a test gives one with other logging levels. */
  readonly hostJson?: string;
  /**
   * Default true: take the machine-wide lock of port 17071. False for a second host beside one that holds it (the
   * extension then listens on a free port in 30000-31000: its client binding's `rpcBaseUrl` says which).
   */
  readonly portLock?: boolean;
}

/** Log records of one category at one level, as the host's `CountingLoggerProvider` counted them. */
export interface HostLogCount {
  readonly category: string;
  /** Microsoft.Extensions.Logging level name: Trace, Debug, Information, Warning, Error, Critical. */
  readonly level: string;
  readonly records: number;
  /** UTF-8 bytes of the records' message and custom dimensions (JSON), Application Insights' envelope not included. */
  readonly bytes: number;
  /** The first record's message (at most 300 characters): what the records are. */
  readonly sample?: string;
}

/** {@link DurableEngineHost.telemetryCounts}'s answer. */
export interface HostTelemetryCounts {
  readonly records: readonly HostLogCount[];
}

/** What a host process runs: everything (`worker`) or only the client API (`client`). */
export type DurableHostRole = 'worker' | 'client';

/**
 * The real Durable engine as a child process (`tools/durable-host`, docs/durable.md), running the built app's Durable
 * functions through the Node bridge: `start`, `kill` (a crash: SIGKILL of the host and its Node worker), `restart`,
 * `stop`. Holds the machine-wide lock of port 17071 from start to stop.
 */
export class DurableEngineHost {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private clientJson: string | undefined;
  private unregister: (() => void) | undefined;
  private readonly lockFile = path.join(tmpdir(), `durable-host-${DURABLE_RPC_PORT}.lock`);
  private locked = false;
  private currentRole: DurableHostRole;
  private telemetryWaiters: Array<(json: string) => void> = [];
  readonly counters = { starts: 0, kills: 0 };
  /** Last lines the host wrote (for failure messages). */
  readonly recentLog: string[] = [];

  private constructor(
    private readonly options: DurableEngineHostOptions,
    private readonly dll: string,
    private readonly appDir: string,
  ) {
    this.currentRole = options.role ?? 'worker';
  }

  /** The host process's pid while it runs (its CPU time is read from /proc by the bench). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Stops the host process (SIGTERM: it finishes and releases what it holds) and starts one of the other role on the
   * same task hub, keeping the port lock: the work a `client` host queued is run by the `worker` it becomes.
   */
  async switchRole(role: DurableHostRole): Promise<void> {
    if (role === this.currentRole && this.child) return;
    await this.terminateChild();
    this.currentRole = role;
    await this.launch();
  }

  /** Builds what is missing (cached), takes the port lock, starts the host and waits until it is ready. */
  static async start(options: DurableEngineHostOptions): Promise<DurableEngineHost> {
    const host = new DurableEngineHost(options, ensureDurableHostBuilt(options.log), builtApp());
    if (options.portLock !== false) {
      await acquirePortLock(host.lockFile);
      host.locked = true;
    }
    host.unregister = whenStopped(() => host.stop());
    try {
      await host.launch();
    } catch (error) {
      await host.stop();
      throw error;
    }
    return host;
  }

  /** The `durableClient` input binding's data the extension produced (what the host passes a JS function). */
  get clientBindingData(): string {
    if (!this.clientJson) throw new Error('the Durable host has not started');
    return this.clientJson;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** The host.json the host applies (its `extensions.durableTask` and `logging.logLevel`). */
  get hostJsonPath(): string {
    return this.options.hostJson ?? path.join(REPO_ROOT, 'host.json');
  }

  private async launch(): Promise<void> {
    // Holding the lock, the port is ours: a host still listening there is an orphan (rpcPortClaim.ts).
    if (this.locked) await claimRpcPort(DURABLE_RPC_PORT, { log: (line) => this.warn(line) });
    const entries = (this.options.entries ?? ['src/functions/payments.js']).map((e) => path.join(this.appDir, e));
    const env: Record<string, string | undefined> = { ...process.env, ...this.options.appSettings };
    delete env.APPLICATIONINSIGHTS_CONNECTION_STRING; // never start a telemetry exporter locally
    // The extension takes CONTAINER_NAME (set on this machine's containers) for Linux Consumption and then writes
    // every engine event as a JSON line to stdout: measured, it halved the host's orchestration starts per second.
    delete env.CONTAINER_NAME;
    Object.assign(env, {
      AzureWebJobsStorage: this.options.storageConnectionString,
      DURABLE_TASK_HUB_NAME: this.options.hubName,
      DURABLE_HOST_JSON: this.hostJsonPath,
      DURABLE_HOST_BRIDGE: path.join(this.appDir, 'tools', 'durable-host', 'bridge.js'),
      DURABLE_HOST_BRIDGE_ARGS: entries.map((e) => `"${e}"`).join(' '),
      DURABLE_HOST_NODE: process.execPath,
      DURABLE_HOST_OVERRIDES: this.options.overrides ? JSON.stringify(this.options.overrides) : '',
      DURABLE_HOST_ROLE: this.currentRole,
      DOTNET_CLI_TELEMETRY_OPTOUT: '1',
      DOTNET_NOLOGO: '1',
    });
    // Its own process group: kill() ends the host and its Node worker together, as a crashed VM would.
    const child = spawn('dotnet', [this.dll], { env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    this.counters.starts++;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const remember = (line: string) => {
      this.recentLog.push(line);
      if (this.recentLog.length > 200) this.recentLog.shift();
      this.options.log?.(line);
    };
    createInterface({ input: child.stderr }).on('line', remember);
    const ready = new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (line.startsWith('DURABLE_HOST_CLIENT ')) this.clientJson = line.slice('DURABLE_HOST_CLIENT '.length);
        else if (line.startsWith('DURABLE_HOST_TELEMETRY ')) this.telemetryWaiters.shift()?.(line.slice('DURABLE_HOST_TELEMETRY '.length));
        else if (line.startsWith('DURABLE_HOST_READY')) resolve();
        else remember(line);
      });
      child.once('exit', (code, signal) => reject(new Error(`the Durable host exited (${code ?? signal}) before it was ready:\n${this.failureSummary()}`)));
    });
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the Durable host was not ready within 180 s')), 180_000).unref());
    await Promise.race([ready, timeout]);
    const rpcPort = Number(new URL((JSON.parse(this.clientBindingData) as { rpcBaseUrl: string }).rpcBaseUrl).port);
    if (this.locked && rpcPort !== DURABLE_RPC_PORT) {
      throw new Error(
        `the Durable host listens on port ${rpcPort}, not ${DURABLE_RPC_PORT}, which another process took meanwhile: clients of ${DURABLE_RPC_PORT} would reach that process`,
      );
    }
  }

  /** A line for the host's log and for stderr (a test's output names what was done about the port). */
  private warn(line: string): void {
    this.recentLog.push(line);
    this.options.log?.(line);
    process.stderr.write(`DurableEngineHost: ${line}\n`);
  }

  /**
   * The log records this host process let through at host.json's levels so far, by category and level, with their
   * bytes (TelemetryCounter.cs). @throws Error when no host process runs or it does not answer within 10 s
   */
  async telemetryCounts(): Promise<HostTelemetryCounts> {
    const child = this.child;
    if (!child?.stdin) throw new Error('the Durable host is not running');
    const answer = new Promise<string>((resolve, reject) => {
      const waiter = (json: string) => {
        clearTimeout(timer);
        resolve(json);
      };
      const timer = setTimeout(() => {
        this.telemetryWaiters = this.telemetryWaiters.filter((w) => w !== waiter);
        reject(new Error('the Durable host did not report its telemetry counts within 10 s'));
      }, 10_000);
      this.telemetryWaiters.push(waiter);
    });
    child.stdin.write('telemetry\n');
    return JSON.parse(await answer) as HostTelemetryCounts;
  }

  /** The host's exception lines (not its stack frames) and its last lines, for a failure message. */
  failureSummary(): string {
    const reasons = this.recentLog.filter((l) => !/^\s+at /.test(l) && /exception|error|fail/i.test(l)).slice(0, 10);
    return [...reasons, '...', ...this.recentLog.filter((l) => !/^\s+at /.test(l)).slice(-10)].join('\n');
  }

  /** A crash: SIGKILL to the host and its Node worker (nothing flushed, no lease released). */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    this.counters.kills++;
    signalGroup(child.pid, 'SIGKILL');
    await this.exited;
  }

  /** Starts the host again on the same task hub (after `kill`): the engine recovers from its queues and history. */
  async restart(): Promise<void> {
    if (this.child) return;
    await this.launch();
  }

  /** Stops the host (SIGTERM, then SIGKILL after 10 s) and releases the port lock. */
  async stop(): Promise<void> {
    this.unregister?.();
    this.unregister = undefined;
    await this.terminateChild();
    if (this.locked) {
      this.locked = false;
      try {
        unlinkSync(this.lockFile);
      } catch {
        /* already removed */
      }
    }
  }

  /** SIGTERM to the host process, SIGKILL after 10 s; then its process group (the Node worker) is killed. */
  private async terminateChild(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const timer = setTimeout(() => signalGroup(child.pid, 'SIGKILL'), 10_000);
      signalGroup(child.pid, 'SIGTERM');
      await this.exited;
      clearTimeout(timer);
      // The Node worker of a host stopped by SIGTERM ends when its stdin closes; make sure of it.
      signalGroup(child.pid, 'SIGKILL');
    }
  }
}

/** Signals the process group led by `pid` (the host and its Node worker); nothing when it is gone. */
function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid!, signal);
  } catch {
    /* gone */
  }
}
