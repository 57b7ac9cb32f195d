import { randomUUID } from 'node:crypto';
import { TableClient } from '@azure/data-tables';
import type * as df from 'durable-functions';
import { keyFromMessageId, payloadDigest } from 'azure-functions-idempotency/internal';
import { paymentsLifecycleFromSettings } from '../../src/app/paymentsLifecycle';
import { consumerStoreFromSettings, storeFromSettings } from '../../src/app/stores';
import { loadSettings } from '../../src/config/settings';
import { redeliveryWindow } from '../../src/lifecycle/retention';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator } from '../support/cosmos';
import { FakeClock } from '../support/tables';

/**
 * Issue 43: the reconciler keeps the records of runs still going alive (`keepAlive`), on both stores as the app wires
 * them (`paymentsLifecycleFromSettings`): a run suspended (or retrying its record write) for weeks must not see its
 * record swept (Table) or expired by TTL (Cosmos), nor taken for expired by a claim. Table on Azurite, Cosmos on the
 * in-process emulator (which does not delete by TTL: the test reads the `ttl` written, which the service counts from
 * each document's last write). The Durable client answers the run's state: Suspended, then Completed.
 */
const DAY_MS = 86_400_000;
const azuriteOf = useAzurite();
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => cosmos?.stop());

/** The part of the Durable client the reconciler reads: each run's state. */
const clientAnswering = (runtimeStatus: string) => ({ getStatus: async () => ({ runtimeStatus }) }) as unknown as df.DurableClient;

describe.each(['table', 'cosmos'] as const)('reconciler keep-alive on the %s store', (storeKind) => {
  test('a record whose run is suspended is kept past its retention (retention moved to now + 2 x the redelivery window; Cosmos: its ttl too); once the run is final, it is not', async () => {
    const prefix = `k${randomUUID().replace(/-/g, '').slice(0, 8)}`;
    const tableClient = (name: string) => TableClient.fromConnectionString(azuriteOf().connectionString, `${prefix}${name}`, { allowInsecureConnection: true });
    const container = storeKind === 'cosmos' ? await cosmos.freshIdempotencyContainer() : undefined;
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
      IDEMPOTENCY_CACHE_SIZE: '0',
      PAYMENTS_DESIGN: 'handoff',
      ...(storeKind === 'cosmos' ? { IDEMPOTENCY_STORE: 'cosmos', COSMOS_ENDPOINT: cosmos.endpoint } : {}),
    });
    const clock = new FakeClock(1_800_000_000_000);
    const overrides = { tableClient, idempotencyContainer: container, clock, leaseMs: 60_000 };
    const tableStore = storeFromSettings(settings, overrides);
    await tableStore.ensureTable();
    const store = consumerStoreFromSettings(settings, overrides, tableStore);
    const key = keyFromMessageId('payments', 'pay-k1');
    const claimed = await store.claim(key, payloadDigest({ paymentId: 'pay-k1' }));
    if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
    const created = await store.get(key);
    const holdMs = redeliveryWindow(settings).totalMs;
    // A day before its retention ends (well inside the redelivery window), the run still suspended.
    clock.now = created!.retentionExpiresAtMs - DAY_MS;
    const lifecycle = paymentsLifecycleFromSettings(settings, overrides);
    const report = await lifecycle.reconcile(clientAnswering('Suspended'), 60_000, new Telemetry());
    expect(report).toMatchObject({ scanned: 1, running: 1, stuck: 1, resolved: [] });
    const kept = await store.get(key);
    expect(kept).toMatchObject({ status: 'IN_PROGRESS', attempt: 1 });
    expect(kept!.retentionExpiresAtMs).toBe(clock.now + 2 * holdMs);
    if (container) {
      // The service expires a document by its ttl, counted from its last write: it must reach past the retention.
      const { resources } = await container.items.query({ query: 'SELECT c.ttl, c.retentionExpiresAtMs FROM c WHERE IS_DEFINED(c.ttl)' }).fetchAll();
      expect(resources.length).toBeGreaterThan(0);
      for (const doc of resources) expect(Number(doc.ttl) * 1000).toBeGreaterThanOrEqual(2 * holdMs);
    }

    // The next day the run is final (terminated): the reconciler takes it up (its restart is refused here: the test
    // wrote no Payment row), and keeps nothing alive: the retention stays as it was.
    clock.now = kept!.retentionExpiresAtMs - DAY_MS;
    const after = await lifecycle.reconcile(clientAnswering('Terminated'), 60_000, new Telemetry());
    expect(after).toMatchObject({ scanned: 1, running: 0 });
    expect((await store.get(key))!.retentionExpiresAtMs).toBe(kept!.retentionExpiresAtMs);
  });
});
