import { CosmosClient, type PluginConfig } from '@azure/cosmos';
import { CosmosIdempotencyStore, keyFromMessageId, payloadDigest } from 'azure-functions-idempotency/internal';
import { CosmosEmulator } from '../cosmos/CosmosEmulator';
import { expectKind, type RoundTripFigures } from './roundTripSection';
import { runConcurrent } from './runConcurrent';

/** Requests on the wire and request units per message of one case, on the Cosmos store. */
export interface CosmosCase {
  /** HTTP requests per message (every try on the wire: counted by a request plugin below the SDK's retries). */
  readonly requests: number;
  /** Request units per message, summed from the answers' `x-ms-request-charge` headers. */
  readonly requestUnits: number;
}

/** The Cosmos store beside the Table store: the same four cases (averages over `messages` messages). */
export interface CosmosFigures {
  readonly messages: number;
  /** claim + complete of a new key. */
  readonly fresh: CosmosCase;
  /** claim of a completed key (failed create + read). */
  readonly duplicate: CosmosCase;
  /** claim of a completed key with `readFirst` (a redelivery, Service Bus deliveryCount > 1): one read. */
  readonly redeliveredDuplicate: CosmosCase;
  /** commit of a new key with one local row (marker and row in one transactional batch). */
  readonly transactional: CosmosCase;
  /** The Table store's round trips of the same cases, from the round-trip section. */
  readonly table: { readonly fresh: number; readonly duplicate: number; readonly redeliveredDuplicate: number; readonly transactional: number };
  /** What the figures cannot say. */
  readonly note: string;
}

const RETENTION_MS = 7 * 86_400_000;
const NOTE =
  'Cosmos figures are from the in-process emulator (@vercel/cosmosdb-server), which charges a flat 1 RU per request: ' +
  "the request counts are what the store sends; the RU column is not the service's (there a ~1 KB point read costs ~1 RU, " +
  'a create ~5-6 RU, a replace ~10 RU, a batch the sum of its operations).';

/**
 * Measures the Cosmos store's requests and RU per message on a fresh container of an emulator it starts
 * (loopback, stopped in every case), beside the Table figures `table` already measured.
 */
export async function measureCosmosSection(messages: number, concurrency: number, table: RoundTripFigures): Promise<CosmosFigures> {
  const emulator = await CosmosEmulator.start();
  let requests = 0;
  let requestUnits = 0;
  const counting: PluginConfig = {
    on: 'request',
    plugin: (context, _diagnosticNode, next) => {
      requests++;
      return next(context);
    },
  };
  // `plugins` is a hidden option of @azure/cosmos (not in its types): its hook for each request on the wire.
  const options = {
    endpoint: emulator.endpoint,
    key: Buffer.from('emulator').toString('base64'), // the emulator accepts any key: a placeholder, never a credential
    connectionPolicy: { enableEndpointDiscovery: false },
    plugins: [counting],
  };
  const client = new CosmosClient(options);
  try {
    const created = await emulator.freshIdempotencyContainer();
    const container = client.database(created.database.id).container(created.id);
    const store = new CosmosIdempotencyStore(container, { retentionMs: RETENTION_MS, onRequestCharge: (charge) => (requestUnits += charge.requestCharge) });
    const keys = Array.from({ length: messages }, (_, i) => keyFromMessageId('bench-cosmos', `msg-${i}`));
    const digestOf = (i: number): string => payloadDigest({ id: i });
    // Warm-up: the SDK's first requests read the account and the container's partition key (once per client).
    await store.get(keyFromMessageId('bench-cosmos', 'warm-up'));
    await store.commit(keyFromMessageId('bench-cosmos', 'warm-up'), digestOf(-1), 'warm');

    const measure = async (task: (i: number) => Promise<void>): Promise<CosmosCase> => {
      const [r0, u0] = [requests, requestUnits];
      await runConcurrent(messages, concurrency, task);
      return { requests: (requests - r0) / messages, requestUnits: (requestUnits - u0) / messages };
    };
    const fresh = await measure(async (i) => {
      const outcome = expectKind(await store.claim(keys[i], digestOf(i)), 'claimed');
      await store.complete(outcome.claim, { ok: i });
    });
    const duplicate = await measure(async (i) => void expectKind(await store.claim(keys[i], digestOf(i)), 'duplicate'));
    const redeliveredDuplicate = await measure(async (i) => void expectKind(await store.claim(keys[i], digestOf(i), { readFirst: true }), 'duplicate'));
    const transactional = await measure(async (i) => {
      const outcome = await store.commit(keyFromMessageId('bench-cosmos-tx', `msg-${i}`), digestOf(i), { ok: i }, [
        { name: 'order', properties: { amount: i } },
      ]);
      if (outcome.kind !== 'committed') throw new Error(`commit of a new key gave ${outcome.kind}`);
    });
    return {
      messages,
      fresh,
      duplicate,
      redeliveredDuplicate,
      transactional,
      table: { fresh: table.fresh, duplicate: table.duplicate, redeliveredDuplicate: table.byDelivery.duplicateRedelivery, transactional: table.transactional },
      note: NOTE,
    };
  } finally {
    client.dispose();
    await emulator.stop();
  }
}

/** The section as text lines, for the bench's table report. */
export function formatCosmosSection(figures: CosmosFigures): string {
  const row = (name: string, tableTrips: number, cosmos: CosmosCase) =>
    `  ${name.padEnd(24)} ${tableTrips.toFixed(2).padStart(11)} ${cosmos.requests.toFixed(2).padStart(16)} ${cosmos.requestUnits.toFixed(2).padStart(10)}`;
  return [
    `Store round trips per message, Table vs Cosmos (${figures.messages} messages each)`,
    `  ${'case'.padEnd(24)} ${'table trips'.padStart(11)} ${'cosmos requests'.padStart(16)} ${'cosmos RU'.padStart(10)}`,
    row('fresh (claim+complete)', figures.table.fresh, figures.fresh),
    row('duplicate', figures.table.duplicate, figures.duplicate),
    row('redelivered duplicate', figures.table.redeliveredDuplicate, figures.redeliveredDuplicate),
    row('transactional (commit)', figures.table.transactional, figures.transactional),
    `  ${figures.note}`,
  ].join('\n');
}
