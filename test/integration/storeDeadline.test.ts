import { TableClient } from '@azure/data-tables';
import { storeFromSettings } from '../../src/app/stores';
import { loadSettings } from '../../src/config/settings';
import {
  ConfigurationError,
  keyFromMessageId,
  payloadDigest,
  RecordStatus,
  StoreUnavailableError,
  TableIdempotencyStore,
  type ClaimOutcome,
} from 'azure-functions-idempotency/internal';
import { useAzurite } from '../support/azurite';
import { SilentServer } from '../support/silentServer';
import { FakeClock, freshTable } from '../support/tables';

const DAY_MS = 86_400_000;
const DEADLINE_MS = 300;
/** What the machine may add to a deadline (timer, abort, a loaded 2-core box). */
const SLACK_MS = 1_500;
const azuriteOf = useAzurite();
const key = keyFromMessageId('payments', 'pay-deadline');
const digest = payloadDigest({ paymentId: 'pay-deadline', amount: 1 });

function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

/** Runs `call`, returns what it threw (or fails the test) and how long it took. */
async function failureOf(call: () => Promise<unknown>): Promise<{ error: StoreUnavailableError; ms: number }> {
  const started = performance.now();
  const error = await call().then(
    () => new Error('expected a failure'),
    (e: unknown) => e,
  );
  const ms = performance.now() - started;
  expect(error).toBeInstanceOf(StoreUnavailableError);
  return { error: error as StoreUnavailableError, ms };
}

/** Lets every request of `method` reach the store, then holds its answer back for `delayMs`. */
function slowAnswers(client: TableClient, method: string, delayMs: number): void {
  client.pipeline.addPolicy(
    {
      name: 'slowAnswers',
      sendRequest: async (request, next) => {
        const response = await next(request);
        if (request.method === method) await new Promise((r) => setTimeout(r, delayMs));
        return response;
      },
    },
    { afterPhase: 'Retry' },
  );
}

describe('store deadline against a store that accepts connections and never answers', () => {
  let silent: SilentServer;
  beforeAll(async () => {
    silent = await SilentServer.start();
  });
  afterAll(async () => {
    await silent.stop();
  });

  /** A client of the silent server, with the SDK's default retry options. */
  function silentClient(): TableClient {
    const azurite = azuriteOf();
    const connectionString = azurite.connectionString.replace(`:${azurite.port}/`, `:${silent.port}/`);
    return TableClient.fromConnectionString(connectionString, 'hangs', { allowInsecureConnection: true });
  }

  test('deadline: claim, commit, complete, release, get and ensureTable each fail with StoreUnavailableError by the deadline', async () => {
    // A real claim on Azurite, so complete/release have a claim to act on at the silent store.
    const real = new TableIdempotencyStore(await freshTable(azuriteOf()), { retentionMs: DAY_MS, clock: new FakeClock() });
    const claim = claimOf(await real.claim(key, digest));
    const store = new TableIdempotencyStore(silentClient(), { retentionMs: DAY_MS, callTimeoutMs: DEADLINE_MS, clock: new FakeClock() });

    const writes = {
      claim: () => store.claim(key, digest),
      commit: () => store.commit(key, digest, { ok: true }, [{ name: 'payment', properties: { amount: 1 } }]),
      complete: () => store.complete(claim, { ok: true }),
      release: () => store.release(claim, 'test'),
      createTable: () => store.ensureTable(),
    };
    const timings: Record<string, number> = {};
    for (const [name, call] of Object.entries(writes)) {
      const { error, ms } = await failureOf(call);
      timings[name] = Math.round(ms);
      expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
      expect(ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
      expect(error.retryable).toBe(true);
      expect(error.writeMayHaveLanded).toBe(true);
      // A claim (and a commit, which claims) reads back after its write's deadline; the read hangs too.
      expect(error.message).toMatch(
        name === 'claim' || name === 'commit'
          ? /the read-back got no answer either: this claim may have been written/
          : new RegExp(`did not answer .* within ${DEADLINE_MS} ms; it was a write: it may have landed`),
      );
    }
    const read = await failureOf(() => store.get(key));
    timings.get = Math.round(read.ms);
    expect(read.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
    expect(read.error.writeMayHaveLanded).toBe(false);
    expect(read.error.message).toMatch(/did not answer read within 300 ms; it was a read: nothing was decided; retry later/);
    // The requests did reach the server, and the abort closed their connections (no socket is left hanging).
    expect(silent.bytesReceived).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 50));
    expect(silent.openConnections).toBe(0);
    process.stdout.write(`deadline ${DEADLINE_MS} ms, failed after (ms): ${JSON.stringify(timings)}\n`);
  }, 15_000);
});

describe('store deadline on Azurite', () => {
  test('deadline: a claim whose insert is answered after the deadline is settled by a read: it landed, it is ours', async () => {
    const client = await freshTable(azuriteOf());
    const store = new TableIdempotencyStore(client, { retentionMs: DAY_MS, callTimeoutMs: DEADLINE_MS, clock: new FakeClock() });
    slowAnswers(client, 'POST', DEADLINE_MS + 500);
    const started = performance.now();
    const outcome = await store.claim(key, digest);
    expect(performance.now() - started).toBeLessThan(2 * DEADLINE_MS + SLACK_MS);
    expect(outcome.kind).toBe('claimed');
    expect(await store.get(key)).toMatchObject({ status: RecordStatus.InProgress, attempt: 1, ownerId: claimOf(outcome).ownerId });
  });

  test('deadline: a completion answered after the deadline fails as "may have landed", and it did land', async () => {
    const client = await freshTable(azuriteOf());
    const store = new TableIdempotencyStore(client, { retentionMs: DAY_MS, callTimeoutMs: DEADLINE_MS, clock: new FakeClock() });
    const claim = claimOf(await store.claim(key, digest));
    slowAnswers(client, 'PATCH', DEADLINE_MS + 500);
    const { error, ms } = await failureOf(() => store.complete(claim, { ok: true }));
    expect(ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
    expect(error.writeMayHaveLanded).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(await store.get(key)).toMatchObject({ status: RecordStatus.Completed });
  });

  test('deadline: a read answered after the deadline fails as "nothing was decided"', async () => {
    const client = await freshTable(azuriteOf());
    const store = new TableIdempotencyStore(client, { retentionMs: DAY_MS, callTimeoutMs: DEADLINE_MS, clock: new FakeClock() });
    slowAnswers(client, 'GET', DEADLINE_MS + 500);
    const { error } = await failureOf(() => store.get(key));
    expect(error.writeMayHaveLanded).toBe(false);
    expect(error.message).toMatch(/nothing was decided/);
  });

  test('deadline: by default 5 s; answers inside it are untouched (claim, duplicate, complete)', async () => {
    const store = new TableIdempotencyStore(await freshTable(azuriteOf()), { retentionMs: DAY_MS, clock: new FakeClock() });
    expect(store.callTimeoutMs).toBe(5_000);
    const claim = claimOf(await store.claim(key, digest));
    await store.complete(claim, 'ok');
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', record: { result: 'ok' } });
  });

  test('deadline: IDEMPOTENCY_STORE_TIMEOUT_MS reaches the store (default 5000); out-of-range values are refused', () => {
    const base = { IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString };
    expect(loadSettings(base).IDEMPOTENCY_STORE_TIMEOUT_MS).toBe(5_000);
    expect(storeFromSettings(loadSettings({ ...base, IDEMPOTENCY_STORE_TIMEOUT_MS: '250' })).callTimeoutMs).toBe(250);
    expect(() => loadSettings({ ...base, IDEMPOTENCY_STORE_TIMEOUT_MS: '0' })).toThrow(/IDEMPOTENCY_STORE_TIMEOUT_MS/);
    for (const callTimeoutMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new TableIdempotencyStore(azureClientStub(), { retentionMs: DAY_MS, callTimeoutMs })).toThrow(ConfigurationError);
    }
  });
});

/** A client that is never called (option validation happens before any request). */
function azureClientStub(): TableClient {
  return TableClient.fromConnectionString(azuriteOf().connectionString, 'never', { allowInsecureConnection: true });
}
