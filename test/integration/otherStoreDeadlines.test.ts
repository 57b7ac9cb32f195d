import { createTableClient } from '../../src/app/tableClient';
import { loadSettings } from '../../src/config/settings';
import { StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { ParkReason } from '../../src/messaging/ParkingStore';
import { useAzurite } from '../support/azurite';
import { SilentServer } from '../support/silentServer';

/**
 * Every Table call of the app has a deadline, not only the idempotency store's: parking (on the
 * consumer's path) and the expiry sweep with its checkpoint, against a store that accepts
 * connections and never answers.
 */
const azuriteOf = useAzurite();
let silent: SilentServer;
beforeAll(async () => {
  silent = await SilentServer.start();
});
afterAll(async () => {
  await silent.stop();
});

/** The app's settings, pointed at the silent server, with a 300 ms store timeout. */
function silentSettings() {
  const azurite = azuriteOf();
  return loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azurite.connectionString.replace(`:${azurite.port}/`, `:${silent.port}/`),
    PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9',
    IDEMPOTENCY_STORE_TIMEOUT_MS: '300',
  });
}

async function failure(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await call().then(
    () => new Error('expected a failure'),
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - started };
}

describe('deadlines beyond the idempotency store', () => {
  test('parking a message on a store that never answers fails by its deadline, retryable, saying the write may have landed', async () => {
    const settings = silentSettings();
    const parking = new ParkingStore(createTableClient(settings, {}, settings.PARKED_TABLE_NAME), undefined, {
      callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
    });
    const { error, ms } = await failure(() =>
      parking.park({ consumer: 'payments', reason: ParkReason.InvalidJson, detail: 'test', info: { messageId: 'm-1' }, body: '{' }),
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).writeMayHaveLanded).toBe(true);
    expect(ms).toBeLessThan(2_000);
  });

  test('an expiry sweep on a store that never answers fails (StoreUnavailableError) instead of hanging the timer', async () => {
    const sweeper = new ExpirySweeper(createTableClient(silentSettings()), { budgetMs: 240_000 });
    const { error, ms } = await failure(() => sweeper.sweep());
    expect(error).toBeInstanceOf(StoreUnavailableError);
    // Per-request timeout of 300 ms, with the SDK's bounded retries: seconds, not the 10-minute function timeout.
    expect(ms).toBeLessThan(15_000);
    process.stdout.write(`sweep against a silent store failed after ${Math.round(ms)} ms\n`);
  }, 30_000);
});
