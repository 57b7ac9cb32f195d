import type { TableClient } from '@azure/data-tables';
import type { Container } from '@azure/cosmos';
import { payloadDigest, type Claim, type ClaimOutcome, type IdempotencyRecord, type ReopenableStore } from 'azure-functions-idempotency';
import { TableIdempotencyStore } from 'azure-functions-idempotency/table';
import { CosmosIdempotencyStore } from 'azure-functions-idempotency/cosmos';
import {
  cosmosRecords,
  runOperatorCli,
  tableRecords,
  type ConsumerExtension,
  type OperatorCliIo,
  type RecordsBackend,
} from 'azure-functions-idempotency/operator';
import type { AzuriteTable } from './azurite';
import type { CosmosEmulator } from './cosmos';
import { FakeClock, freshTable } from './tables';

/**
 * A rig of the operator's console on one real store (Azurite or the Cosmos stand-in): the consumer's store with a
 * settable clock (records written "now" by it), the console's backend on the same table or container, the connection
 * options the CLI needs, and a runner that calls the CLI in this process, capturing its stdout and stderr lines.
 */
export interface ConsoleRig {
  readonly kind: 'table' | 'cosmos';
  readonly clock: FakeClock;
  readonly store: ReopenableStore;
  readonly backend: RecordsBackend;
  /** The CLI's options that reach this table or container. */
  readonly connection: readonly string[];
  /** A store over the same table or container with its own lease and clock. */
  storeWith(options: { leaseMs?: number; clock?: FakeClock }): ReopenableStore;
  run(argv: readonly string[], io?: Partial<OperatorCliIo>): Promise<CliRun>;
}

export interface CliRun {
  readonly code: number;
  readonly out: readonly string[];
  readonly err: readonly string[];
  /** stdout and stderr, joined: what an operator sees. */
  readonly text: string;
}

const RETENTION_MS = 30 * 86_400_000;
const LEASE_MS = 60_000;

/** Runs the CLI in this process with `connection` first, capturing its lines. */
async function runWith(connection: readonly string[], clock: FakeClock, argv: readonly string[], io: Partial<OperatorCliIo> = {}): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runOperatorCli([...connection, ...argv], { env: {}, clock, out: (line) => out.push(line), err: (line) => err.push(line), ...io });
  return { code, out, err, text: [...out, ...err].join('\n') };
}

/** A rig on a fresh table of `azurite`. */
export async function tableRig(azurite: AzuriteTable): Promise<ConsoleRig & { client: TableClient }> {
  const client = await freshTable(azurite, 'keys');
  const clock = new FakeClock();
  const storeWith = (options: { leaseMs?: number; clock?: FakeClock }) =>
    new TableIdempotencyStore(client, { leaseMs: options.leaseMs ?? LEASE_MS, retentionMs: RETENTION_MS, clock: options.clock ?? clock });
  const connection = ['--table-connection-string', azurite.connectionString, '--table', client.tableName];
  return {
    kind: 'table',
    client,
    clock,
    store: storeWith({}),
    backend: tableRecords(client),
    connection,
    storeWith,
    run: (argv, io) => runWith(connection, clock, argv, io),
  };
}

/** A rig on a fresh container of the Cosmos stand-in. */
export async function cosmosRig(cosmos: CosmosEmulator): Promise<ConsoleRig & { container: Container }> {
  const container = await cosmos.freshIdempotencyContainer();
  const clock = new FakeClock();
  const storeWith = (options: { leaseMs?: number; clock?: FakeClock }) =>
    new CosmosIdempotencyStore(container, { leaseMs: options.leaseMs ?? LEASE_MS, retentionMs: RETENTION_MS, clock: options.clock ?? clock });
  const connection = [
    '--store',
    'cosmos',
    '--cosmos-endpoint',
    cosmos.endpoint,
    // The stand-in accepts any key; a placeholder, never a real credential.
    '--cosmos-key',
    Buffer.from('emulator').toString('base64'),
    '--cosmos-database',
    container.database.id,
    '--cosmos-container',
    container.id,
  ];
  return {
    kind: 'cosmos',
    container,
    clock,
    store: storeWith({}),
    backend: cosmosRecords(container),
    connection,
    storeWith,
    run: (argv, io) => runWith(connection, clock, argv, io),
  };
}

/** The claim of an outcome that must be one. */
export function claimOf(outcome: ClaimOutcome): Claim {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

/** A payment-like payload whose digest the records carry; `SECRET` marks what must never be printed. */
export function payloadOf(id: string): { paymentId: string; card: string } {
  return { paymentId: id, card: `SECRET-CARD-${id}` };
}

export const digestOf = (id: string) => payloadDigest(payloadOf(id));

/**
 * Puts records of `consumer` in each state (keys `<prefix>-<state>`), through the store as a consumer would:
 * completed with a result and a local row holding "secrets", in progress (live and lapsed), released by a failing
 * attempt, completed "failed" and "held" (as the test extension reads them).
 */
export async function seedStates(rig: ConsoleRig, consumer: string, prefix: string): Promise<Record<string, IdempotencyRecord>> {
  const key = (name: string) => ({ consumer, key: `${prefix}-${name}` });
  const row = (name: string) => [{ name: 'payment', properties: { status: 'pending', card: `SECRET-CARD-${prefix}-${name}` } }];
  const complete = async (name: string, result: unknown) => {
    const claim = claimOf(await rig.store.claim(key(name), digestOf(`${prefix}-${name}`), { effects: row(name) }));
    await rig.store.complete(claim, result);
  };
  await complete('completed', { chargeId: 'ch-1', note: 'SECRET-RESULT' });
  await complete('failed', { status: 'failed', reason: 'provider down' });
  await complete('held', { status: 'failed', code: 'held-for-operator', reason: 'takeover past the key memory' });
  const released = claimOf(await rig.store.claim(key('released'), digestOf(`${prefix}-released`)));
  await rig.store.release(released, 'handler threw: TypeError');
  const shortLease = rig.storeWith({ leaseMs: 1000 });
  claimOf(await shortLease.claim(key('lapsed'), digestOf(`${prefix}-lapsed`), { effects: row('lapsed') }));
  rig.clock.advance(5_000);
  claimOf(await rig.store.claim(key('live'), digestOf(`${prefix}-live`), { effects: row('live') }));
  const records: Record<string, IdempotencyRecord> = {};
  for (const name of ['completed', 'failed', 'held', 'released', 'lapsed', 'live']) records[name] = (await rig.store.get(key(name)))!;
  return records;
}

/** The test extension: a payments-like reading of results, the row's status shown, work going for keys in `busy`. */
export function testExtension(consumer: string, busy: Set<string> = new Set()): ConsumerExtension {
  return {
    consumer,
    classify: (record) => {
      const result = record.result as { status?: string; code?: string } | undefined;
      if (result?.code === 'held-for-operator') return 'held';
      return result?.status === 'failed' ? 'failed' : undefined;
    },
    describe: async (_record, { readLocalRow }) => ({ 'payment row': String((await readLocalRow('payment'))?.status ?? 'none') }),
    activeWork: async (record) => (busy.has(record.key) ? 'its run is Running' : undefined),
  };
}
