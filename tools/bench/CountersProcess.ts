import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { builtApp } from '../local/durable/DurableEngineHost';
import type { AliasSpec } from './counterAliases';
import type { RpcCounts } from './countingRpcProxy';
import type { Stall } from '../azurite/stallWatch';
import type { SlowRequest } from './slowRequests';
import type { StorageCounts } from './StorageTrafficCounter';

/** A storage counter running in the counters' process. */
export interface RemoteStorageCounter {
  /** The connection string whose endpoints point at the counting proxies. */
  readonly connectionString: string;
  snapshot(): Promise<StorageCounts>;
}

/** A counting proxy of the Durable client's HTTP calls, running in the counters' process. */
export interface RemoteRpcProxy {
  readonly url: string;
  counts(): Promise<RpcCounts>;
}

/**
 * The bench's counting proxies in a child process of their own, so that this process's CPU time is the trigger's and
 * the bus's (the proxies' is read apart, `pid`). The child exits when this process ends its IPC channel or dies.
 */
export class CountersProcess {
  private nextId = 0;
  /** Each storage counter's account name, by its index in the child: `app` (a table prefix) or `durable` (a task hub). */
  private readonly accounts: string[] = [];
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: { id: number; ok: boolean; value?: unknown; error?: string }) => {
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (message.ok) waiter.resolve(message.value);
      else waiter.reject(new Error(`counters process: ${message.error}`));
    });
    child.on('exit', (code) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`counters process exited (${code})`));
      this.pending.clear();
    });
  }

  static async start(): Promise<CountersProcess> {
    // Run from dist/, the compiled sibling; under Jest (sources), the tools' compilation the Durable host loads too.
    const script = __filename.endsWith('.js') ? path.join(__dirname, 'countersChild.js') : path.join(builtApp(), 'tools', 'bench', 'countersChild.js');
    const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    return new CountersProcess(child);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Starts a {@link StorageTrafficCounter} in front of `connectionString`'s loopback endpoints. */
  async storage(connectionString: string, alias: AliasSpec): Promise<RemoteStorageCounter> {
    const { counter, connectionString: proxied } = (await this.call('storage', { connectionString, alias })) as { counter: number; connectionString: string };
    this.accounts[counter] = 'prefix' in alias ? 'app' : 'durable';
    return { connectionString: proxied, snapshot: () => this.call('snapshot', { counter }) as Promise<StorageCounts> };
  }

  /** Starts a counting pass-through to the Durable extension's HTTP API at `target`. */
  async rpc(target: string): Promise<RemoteRpcProxy> {
    const { proxy, url } = (await this.call('rpc', { target })) as { proxy: number; url: string };
    return { url, counts: () => this.call('rpcCounts', { proxy }) as Promise<RpcCounts> };
  }

  /**
   * Requests sent since `sinceMs` (epoch) whose answer took 200 ms or more, slowest first: storage as
   * `app.table.idempotency.batch` or `durable.queue.control.put`, the Durable client's calls as `rpc.starts`.
   */
  async slow(sinceMs: number): Promise<SlowRequest[]> {
    const groups = (await this.call('slow', { sinceMs })) as Array<{ index: number; list: SlowRequest[] }>;
    return groups
      .flatMap(({ index, list }) => list.map((r) => (index < 0 ? r : { ...r, what: `${this.accounts[index] ?? 'storage'}.${r.what}` })))
      .sort((a, b) => b.ms - a.ms);
  }

  /** Pauses of 200 ms or more of the proxies' own event loop since `sinceMs` (epoch). */
  async stalls(sinceMs: number): Promise<Stall[]> {
    return (await this.call('stalls', { sinceMs })) as Stall[];
  }

  /** Ends the child (its proxies close with it). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  private call(op: string, args: unknown): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, op, args }, (error) => {
        if (error) {
          this.pending.delete(id);
          reject(error);
        }
      });
    });
  }
}
