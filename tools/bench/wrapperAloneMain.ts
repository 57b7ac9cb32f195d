/**
 * The wrapper's CPU alone (docs/performance.md, "Third pass"): fresh messages through `makeIdempotent` over a real
 * `TableClient` whose HTTP client answers at once (204 with an ETag; no I/O, no Azurite), so a change of a few
 * microseconds to the wrapper, the store or the request building shows, which the overhead section's real writes
 * (1,000+ us each) hide. Each build (`label=DIR`, a directory holding a compiled core package, as `--compare` of
 * `npm run bench`; `this` is the working tree's) runs in every round, in an order that alternates; client CPU per
 * message (user + system), median over the rounds and the median ratio to the first build per round.
 *
 * `node dist/tools/bench/wrapperAloneMain.js [--messages N] [--rounds N] [--bare] [--compare L=DIR,...]` after
 * `npm run tools:build`; `--bare` removes the client's pipeline policies but the deserialization policy (the wrapper
 * and the store alone), otherwise the whole pipeline runs (its tracing policy skipped as the store does).
 */
import { AzureNamedKeyCredential, TableClient, type TableServiceClientOptions } from '@azure/data-tables';
import { optionReader, parseCommandLine, runTool } from '../cli/commandLine';
import { coreFrom, currentCore, type CoreUnderTest } from './coreUnderTest';
import { runConcurrent } from './runConcurrent';
import { settleHeap } from './settleHeap';
import { median, round } from './stats';

/** Azurite's well-known development account (no request leaves the process here). */
const ACCOUNT = new AzureNamedKeyCredential('devstoreaccount1', 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==');
const CONCURRENCY = 16;
const USAGE = `usage: node dist/tools/bench/wrapperAloneMain.js [options]
  --messages N        fresh messages per build and round (default 10000)
  --rounds N          measured rounds, after one warm-up (default 7)
  --bare              the client's pipeline policies removed but deserialization (the wrapper and the store alone)
  --compare L=DIR,... more builds of the core package beside this one (DIR holds its dist/)`;

/** Response headers as the pipeline reads them (`get`, `has`, `toJSON`, iteration). */
class AnswerHeaders {
  private readonly map: Map<string, string>;
  constructor(raw: Record<string, string>) {
    this.map = new Map(Object.entries(raw).map(([name, value]) => [name.toLowerCase(), value]));
  }
  get(name: string): string | undefined {
    return this.map.get(name.toLowerCase());
  }
  has(name: string): boolean {
    return this.map.has(name.toLowerCase());
  }
  set(name: string, value: string | number | boolean): void {
    this.map.set(name.toLowerCase(), String(value));
  }
  delete(name: string): void {
    this.map.delete(name.toLowerCase());
  }
  toJSON(): Record<string, string> {
    return Object.fromEntries(this.map);
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.map.entries();
  }
}

interface StubRequest {
  readonly method: string;
  readonly abortSignal?: AbortSignal;
}

let answered = 0;

/** An HTTP client that answers every request with 204 and a new ETag on the next turn, with the listener on the request's signal the SDK's own client adds and removes. */
const answeringClient = {
  async sendRequest(request: StubRequest): Promise<{ status: number; headers: AnswerHeaders; request: StubRequest }> {
    const own = new AbortController();
    const onAbort = () => own.abort();
    request.abortSignal?.addEventListener('abort', onAbort);
    await new Promise<void>((resolve) => setImmediate(resolve));
    request.abortSignal?.removeEventListener('abort', onAbort);
    const headers: Record<string, string> = {
      etag: `W/"datetime'2026-12-07T00%3A00%3A${answered++}Z'"`,
      'x-ms-version': '2019-02-02',
      date: new Date().toUTCString(),
    };
    if (request.method === 'POST') headers['preference-applied'] = 'return-no-content';
    return { status: 204, headers: new AnswerHeaders(headers), request };
  },
};

function answeringTable(bare: boolean): TableClient {
  const client = new TableClient('http://127.0.0.1:10002/devstoreaccount1', 'alone', ACCOUNT, {
    httpClient: answeringClient as unknown as TableServiceClientOptions['httpClient'],
    allowInsecureConnection: true,
  });
  if (bare)
    for (const policy of client.pipeline.getOrderedPolicies()) if (policy.name !== 'deserializationPolicy') client.pipeline.removePolicy({ name: policy.name });
  return client;
}

async function main(): Promise<void> {
  const values = parseCommandLine(process.argv.slice(2), {
    messages: { type: 'string' },
    rounds: { type: 'string' },
    bare: { type: 'boolean' },
    compare: { type: 'string' },
  });
  if (values === 'help') return void process.stdout.write(`${USAGE}\n`);
  const read = optionReader(values);
  const messages = read.integer('messages', { min: 100, max: 1_000_000, default: 10_000 });
  const rounds = read.integer('rounds', { min: 1, max: 100, default: 7 });
  const bare = read.flag('bare');
  const others = (read.optional('compare') ?? '').split(',').filter((entry) => entry !== '');
  for (const entry of others) if (!/^[\w-]+=.+$/.test(entry)) read.problem(`--compare takes label=DIR entries, got ${JSON.stringify(entry)}`);
  read.done();
  const builds: CoreUnderTest[] = [currentCore(), ...others.map((entry) => coreFrom(entry.slice(entry.indexOf('=') + 1), entry.slice(0, entry.indexOf('='))))];
  const wrapped = builds.map((core) => {
    const store = new core.TableIdempotencyStore(answeringTable(bare), { retentionMs: 7 * 86_400_000 });
    const handle = core.makeIdempotent(async (msg: { id: string; amount: number }) => ({ ok: true, amount: msg.amount }), {
      store,
      keyOf: (msg) => core.keyFromMessageId('alone', msg.id),
    });
    return { label: core.label, handle, perRound: [] as number[] };
  });
  for (let r = 0; r <= rounds; r++) {
    for (const build of r % 2 === 0 ? wrapped : [...wrapped].reverse()) {
      settleHeap();
      const before = process.cpuUsage();
      await runConcurrent(messages, CONCURRENCY, async (i) => void (await build.handle({ id: `${build.label}${r}-${i}`, amount: i })));
      const used = process.cpuUsage(before);
      if (r > 0) build.perRound.push((used.user + used.system) / messages);
    }
  }
  const first = wrapped[0].perRound;
  for (const build of wrapped) {
    const ratio = median(build.perRound.map((us, i) => us / first[i]));
    process.stdout.write(
      `${build.label.padEnd(12)} ${round(median(build.perRound), 1)} us/message (rounds ${build.perRound.map((us) => round(us, 1)).join(', ')}), ratio to ${wrapped[0].label} ${round(ratio, 3)}\n`,
    );
  }
}

void runTool('wrapper-alone', main);
