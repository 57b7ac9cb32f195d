/**
 * The payments consumer refuses a shard layout its table was not migrated to (docs/DESIGN.md "Past one task hub"), on a
 * real Azurite: shard 0 of 2 whose table holds a live payment record shard 1 owns claims nothing (the delivery throws
 * `ShardLayoutRefusedError` before its claim), says so (an error log naming the key, its owner shard and this shard;
 * `payments.shard_layout_refused`), and goes on by itself once the record is gone (checked again after the recheck
 * interval). The check is bounded (one request per partition) and looks only at live payment records.
 */
import { TableClient } from '@azure/data-tables';
import { InvocationContext } from '@azure/functions';
import { randomUUID } from 'node:crypto';
import { keyFromMessageId, TableIdempotencyStore, tableAddress } from 'azure-functions-idempotency/internal';
import { chargeOnce } from '../../src/app/durableCharge';
import { paymentsFromSettings, providerFromSettings } from '../../src/app/payments';
import { paymentsLayoutGate } from '../../src/app/paymentsFunctions';
import { makePaymentsHandler } from '../../src/app/paymentsHandler';
import type { RideOutPlan } from '../../src/messaging/storeOutage';
import { LAYOUT_RECHECK_MS, ShardLayoutRefusedError } from '../../src/app/shardLayoutGate';
import { loadSettings } from '../../src/config/settings';
import { strayPaymentRecords } from '../../src/payments/shardOwnership';
import { shardOf } from '../../src/payments/shards';
import { MetricNames } from '../../src/telemetry/Telemetry';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { LocalChargeWorkflow } from '../../tools/local/LocalChargeWorkflow';
import { useAzurite } from '../support/azurite';
import { inMemoryTelemetry } from '../support/telemetry';

const azuriteOf = useAzurite();
let provider: FakePaymentProvider;
beforeAll(async () => {
  provider = await FakePaymentProvider.start();
});
afterAll(async () => {
  await provider?.stop();
});

/** The first ids of the form `<prefix>-<i>` that shard `shard` of 2 owns. */
const idsOwnedBy = (shard: number, prefix: string, n: number) =>
  Array.from({ length: 50 }, (_, i) => `${prefix}-${i}`)
    .filter((id) => shardOf(id, 2) === shard)
    .slice(0, n);

/** Shard 0 of 2 on its own table: the settings, its store, the handler with the app's layout gate, a settable clock. */
async function shardZero() {
  const prefix = `lay${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const table = (name: string) => TableClient.fromConnectionString(azuriteOf().connectionString, `${prefix}${name}`, { allowInsecureConnection: true });
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    IDEMPOTENCY_CACHE_SIZE: '0',
    PAYMENT_PROVIDER_URL: provider.url,
    PAYMENTS_DESIGN: 'hold',
    PAYMENT_SHARD_COUNT: '2',
    PAYMENT_SHARD_INDEX: '0',
    PAYMENTS_QUEUE_NAME: 'payments-0',
  });
  let offsetMs = 0;
  const clock = { nowMs: () => Date.now() + offsetMs };
  const { telemetry, counter, logs } = inMemoryTelemetry();
  const providerClient = providerFromSettings(settings, telemetry);
  const durableTable = table('durable');
  const workflow = new LocalChargeWorkflow({
    table: durableTable,
    chargeProvider: (input) => chargeOnce(providerClient, input),
    retry: { maxAttempts: 3, firstRetryIntervalMs: 50 },
  });
  const { store, parking, consumer } = paymentsFromSettings(settings, { tableClient: (name) => table(name), telemetry, workflow, leaseMs: 2_000 });
  await Promise.all([store.ensureTable(), parking.ensureTable(), durableTable.createTable()]);
  const layoutGate = paymentsLayoutGate(settings, () => store.client, { clock });
  const slept: number[] = [];
  const handlerWith = (rideOut?: RideOutPlan) =>
    makePaymentsHandler({
      consumer: () => consumer,
      telemetry: () => telemetry,
      workflow: () => workflow,
      layoutGate,
      rideOut,
      sleep: async (ms) => void slept.push(ms),
    });
  let handler = handlerWith();
  const deliver = (paymentId: string) =>
    handler(
      { paymentId, customerId: 'cust-1', amount: 1250, currency: 'EUR' },
      new InvocationContext({
        invocationId: randomUUID(),
        functionName: 'paymentsConsumer',
        triggerMetadata: { messageId: paymentId, deliveryCount: 1 },
        logHandler: () => undefined,
      }),
    );
  const advance = (ms: number) => void (offsetMs += ms);
  const rideOut = (plan: RideOutPlan) => void (handler = handlerWith(plan));
  return { settings, store, deliver, advance, counter, logs, slept, rideOut };
}

/** A completed payments record of `paymentId` written straight to `store`'s table (as the old layout's shard left it). */
async function leftBehind(store: TableIdempotencyStore, paymentId: string): Promise<void> {
  const claim = await store.claim(keyFromMessageId('payments', paymentId), 'digest-old-layout');
  if (claim.kind !== 'claimed') throw new Error(claim.kind);
  await store.complete(claim.claim, { status: 'succeeded', chargeId: 'ch_old', amount: 1250, currency: 'EUR' });
}

describe('the refusal of a shard layout the table was not migrated to (Azurite)', () => {
  test('shard 0 of 2 holding a live payment of shard 1 claims nothing, logs the key with both shards and counts it; once the record is moved it goes on by itself', async () => {
    const s = await shardZero();
    const [stray] = idsOwnedBy(1, 'moved', 1);
    const [mine] = idsOwnedBy(0, 'new', 1);
    await leftBehind(s.store, stray);

    const refused = s.deliver(mine);
    await expect(refused).rejects.toBeInstanceOf(ShardLayoutRefusedError);
    await expect(refused).rejects.toThrow(`payment ${stray} (COMPLETED) is in the table of shard 0, but belongs to shard 1 of 2`);
    expect(await s.store.get(keyFromMessageId('payments', mine))).toBeUndefined(); // never claimed
    expect(provider.chargesFor(mine)).toBe(0);
    expect(await s.counter(MetricNames.shardLayoutRefused, { consumer: 'payments' })).toBe(1);
    const line = s.logs().find((l) => l.attributes.outcome === 'layout-refused');
    expect(line).toMatchObject({ severity: 'ERROR', attributes: { idempotencyKey: stray, ownerShard: 1, shard: 0, shardCount: 2 } });

    // Within the recheck interval the refusal stands without reading the table again.
    await expect(s.deliver(mine)).rejects.toBeInstanceOf(ShardLayoutRefusedError);
    expect(await s.counter(MetricNames.shardLayoutRefused, { consumer: 'payments' })).toBe(1);

    // The operator moves the record (payments:reshard deletes it here after copying it to shard 1).
    const address = tableAddress(keyFromMessageId('payments', stray), s.settings.IDEMPOTENCY_PARTITION_COUNT);
    await s.store.client.deleteEntity(address.partitionKey, address.rowKey);
    s.advance(LAYOUT_RECHECK_MS);
    await expect(s.deliver(mine)).resolves.toMatchObject({ outcome: 'processed', result: { status: 'succeeded' } });
    expect(provider.chargesFor(mine)).toBe(1);
    expect(s.logs().some((l) => l.attributes.outcome === 'layout-accepted')).toBe(true);
  });

  test("the check is bounded (one request per partition) and reads only live payment records: its own, other consumers' and expired ones pass", async () => {
    const s = await shardZero();
    for (const id of idsOwnedBy(0, 'own', 3)) await leftBehind(s.store, id);
    const strangers = idsOwnedBy(1, 'other', 2);
    // Another consumer's records under keys shard 1 would own as payments: not payments, not checked.
    for (const id of strangers) {
      const claim = await s.store.claim(keyFromMessageId('orders', id), 'digest-order');
      if (claim.kind === 'claimed') await s.store.complete(claim.claim, { ok: true });
    }
    // A payment of shard 1 past its retention (the sweep's to delete, no claim reads it as live): not refused.
    const expired = new TableIdempotencyStore(s.store.client, { retentionMs: 1 });
    const claim = await expired.claim(keyFromMessageId('payments', strangers[0]), 'digest-expired');
    if (claim.kind === 'claimed') await expired.complete(claim.claim, { status: 'declined', reason: 'old' });
    await new Promise((resolve) => setTimeout(resolve, 20));

    const report = await strayPaymentRecords(s.store.client, {
      layout: { count: 2, index: 0 },
      partitionCount: s.settings.IDEMPOTENCY_PARTITION_COUNT,
      nowMs: Date.now(),
      callTimeoutMs: 5_000,
    });
    expect(report).toEqual({ checked: 3, requests: s.settings.IDEMPOTENCY_PARTITION_COUNT, strays: [] });
    const [mine] = idsOwnedBy(0, 'fresh', 1);
    await expect(s.deliver(mine)).resolves.toMatchObject({ outcome: 'processed' });
    // N = 1 owns every key: no request at all.
    expect(await strayPaymentRecords(s.store.client, { layout: { count: 1, index: 0 }, partitionCount: 16, nowMs: Date.now(), callTimeoutMs: 5_000 })).toEqual({
      checked: 0,
      requests: 0,
      strays: [],
    });
  });

  test('a refused delivery waits inside its invocation (the ride-out budget, lock renewed) and asks again before it is abandoned: one delivery spent per wait', async () => {
    const s = await shardZero();
    const [stray] = idsOwnedBy(1, 'late', 1);
    const [mine] = idsOwnedBy(0, 'waiting', 1);
    await leftBehind(s.store, stray);
    s.rideOut({ budgetMs: 237_000, firstDelayMs: 1_000, maxDelayMs: 15_000 });
    await expect(s.deliver(mine)).rejects.toBeInstanceOf(ShardLayoutRefusedError);
    expect(s.slept).toEqual([237_000]);
    expect(await s.store.get(keyFromMessageId('payments', mine))).toBeUndefined();
  });
});
