import { StallLog, watchStalls } from '../azurite/stallWatch';
import { countingRpcProxy } from './countingRpcProxy';
import { aliasOf, type AliasSpec } from './counterAliases';
import { StorageTrafficCounter } from './StorageTrafficCounter';

/** The child process of {@link CountersProcess}: answers IPC requests `{ id, op, args }` with `{ id, ok, value | error }`. */
type Request =
  | { id: number; op: 'storage'; args: { connectionString: string; alias: AliasSpec } }
  | { id: number; op: 'rpc'; args: { target: string } }
  | { id: number; op: 'snapshot'; args: { counter: number } }
  | { id: number; op: 'rpcCounts'; args: { proxy: number } }
  | { id: number; op: 'slow'; args: { sinceMs: number } }
  | { id: number; op: 'stalls'; args: { sinceMs: number } };

const counters: StorageTrafficCounter[] = [];
const proxies: Array<Awaited<ReturnType<typeof countingRpcProxy>>> = [];
/** This process's own event-loop pauses: a proxy that stalled would show as slow answers of everything it forwards. */
const stalls = new StallLog();
watchStalls(stalls);

async function answer(request: Request): Promise<unknown> {
  switch (request.op) {
    case 'storage': {
      const counter = await StorageTrafficCounter.start(request.args.connectionString, aliasOf(request.args.alias));
      counters.push(counter);
      return { counter: counters.length - 1, connectionString: counter.connectionString };
    }
    case 'rpc': {
      const proxy = await countingRpcProxy(request.args.target);
      proxies.push(proxy);
      return { proxy: proxies.length - 1, url: proxy.url };
    }
    case 'snapshot':
      return counters[request.args.counter].snapshot();
    case 'rpcCounts':
      return { ...proxies[request.args.proxy].counts };
    case 'slow':
      return [
        ...counters.map((c, i) => ({ index: i, list: c.slow.since(request.args.sinceMs) })),
        { index: -1, list: proxies.flatMap((p) => p.slow.since(request.args.sinceMs)) },
      ];
    case 'stalls':
      return stalls.since(request.args.sinceMs);
  }
}

process.on('message', (request: Request) => {
  answer(request).then(
    (value) => process.send!({ id: request.id, ok: true, value }),
    (error: unknown) => process.send!({ id: request.id, ok: false, error: String((error as Error)?.stack ?? error) }),
  );
});
// The parent's end of the IPC channel closing (it stopped or died) ends this process.
process.on('disconnect', () => process.exit(0));
