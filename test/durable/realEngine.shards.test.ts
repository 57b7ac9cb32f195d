/**
 * Past one task hub (issue 52 item 4), measured here: two shards at once on this machine, each the payments app on a
 * real Durable engine of its own (tools/durable-host: two host processes, two task hubs, two storage accounts on
 * Azurite for the hubs and two for the consumers' tables), the payments routed by key (`shardOf`). Each payment is
 * charged once, its record, its run and its entity live only in the shard that owns it, and a payment sent to the
 * wrong shard is parked there, never claimed. The storage requests of each hub are counted (a proxy in front of each).
 */
import { TableClient } from '@azure/data-tables';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { loadSettings } from '../../src/config/settings';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { shardOf } from '../../src/payments/shards';
import { StorageTrafficCounter } from '../../tools/bench/StorageTrafficCounter';
import { AzuriteTable } from '../../tools/azurite/AzuriteTable';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startRealEnginePayments } from '../../tools/local/durable/realEnginePayments';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';

const SHARDS = 2;
const PAYMENTS = 48;
type Shard = Awaited<ReturnType<typeof startRealEnginePayments>> & { counter: StorageTrafficCounter; table: AzuriteTable };
const payment = (paymentId: string) => ({ paymentId, customerId: 'cust-1', amount: 1250, currency: 'EUR' });

async function startShard(index: number, provider: FakePaymentProvider): Promise<Shard> {
  const table = await AzuriteTable.start();
  let counter: StorageTrafficCounter | undefined;
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: table.connectionString,
    IDEMPOTENCY_CACHE_SIZE: '0',
    PAYMENT_PROVIDER_URL: provider.url,
    PAYMENT_PROVIDER_TIMEOUT_MS: '5000',
    PAYMENT_SHARD_COUNT: String(SHARDS),
    PAYMENT_SHARD_INDEX: String(index),
    PAYMENTS_QUEUE_NAME: `payments-${index}`,
  });
  const real = await startRealEnginePayments({
    settings,
    hubName: `shard${index}${Math.random().toString(36).slice(2, 7)}`,
    overrides: {
      tableClient: (name) => TableClient.fromConnectionString(table.connectionString, name, { allowInsecureConnection: true }),
      leaseMs: 60_000,
      design: 'handoff',
    },
    engineStorage: async (connectionString) => (counter = await StorageTrafficCounter.start(connectionString)).connectionString,
    // The first shard's host takes port 17071 (and the machine-wide lock); the second listens where the extension finds room.
    portLock: index === 0,
  });
  await Promise.all([real.parts.store.ensureTable(), real.parts.parking.ensureTable()]);
  return Object.assign(real, { counter: counter!, table });
}

/** The run's instance id of `paymentId` as its record names it (one per record lifetime). */
async function instanceOf(shard: Shard, paymentId: string): Promise<string | undefined> {
  const record = await shard.parts.store.get(keyFromMessageId('payments', paymentId));
  return record && chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
}

async function hubHolds(shard: Shard, instanceId: string): Promise<boolean> {
  const rows = shard.backend.hubTable('Instances').listEntities({ queryOptions: { filter: `PartitionKey eq '${instanceId}'` } });
  for await (const row of rows) if (row) return true;
  return false;
}

realEngineTest(
  'past one task hub: two shards at once (two Durable hosts, two hubs, two accounts); payments routed by key are charged once each, live only in their own shard (record, run), a payment sent to the wrong shard is parked there; requests counted per hub',
  async () => {
    const provider = await FakePaymentProvider.start();
    const shards: Shard[] = [];
    try {
      for (let index = 0; index < SHARDS; index++) shards.push(await startShard(index, provider));
      const rpc = shards.map((s) => (JSON.parse(s.backend.engine.clientBindingData) as { rpcBaseUrl: string }).rpcBaseUrl);
      expect(new Set(rpc).size).toBe(SHARDS); // two engines at once, each its own endpoint

      const ids = Array.from({ length: PAYMENTS }, (_, i) => `shard-pay-${i}`);
      const owner = new Map(ids.map((id) => [id, shardOf(id, SHARDS)]));
      const perShard = shards.map((_, index) => ids.filter((id) => owner.get(id) === index).length);
      // A payment sent to the shard that does not own it: parked with its reason, nothing claimed there.
      const stray = ids.find((id) => owner.get(id) === 1)!;
      expect(await shards[0].deliver(payment(stray), { messageId: stray, deliveryCount: 1 })).toMatchObject({
        outcome: 'parked',
        reason: expect.stringContaining(`misrouted: payment ${stray} belongs to shard 1 of 2, this is shard 0`),
      });
      expect(await shards[0].parts.store.get(keyFromMessageId('payments', stray))).toBeUndefined();

      const before = shards.map((s) => s.counter.snapshot());
      const outcomes = await Promise.all(ids.map((id) => shards[owner.get(id)!].deliver(payment(id), { messageId: id, deliveryCount: 1 })));
      expect(outcomes.every((o) => o.outcome === 'handedOff')).toBe(true);
      await Promise.all(shards.map((s) => s.workflow.drain(300_000)));

      for (const id of ids) {
        const mine = shards[owner.get(id)!];
        const other = shards[1 - owner.get(id)!];
        expect({ id, charges: provider.chargesFor(id) }).toEqual({ id, charges: 1 });
        expect(await mine.parts.store.get(keyFromMessageId('payments', id))).toMatchObject({ status: 'COMPLETED', result: { status: 'succeeded' } });
        expect(await other.parts.store.get(keyFromMessageId('payments', id))).toBeUndefined();
        const instanceId = (await instanceOf(mine, id))!;
        expect({ id, own: await hubHolds(mine, instanceId), other: await hubHolds(other, instanceId) }).toEqual({ id, own: true, other: false });
      }
      for (const shard of shards) expect(await shard.backend.store.failedInstances()).toEqual([]);

      // Requests per hub (each its own account) for its own payments; the router's spread.
      const requests = shards.map((s, index) => {
        const after = s.counter.snapshot().requests;
        return Object.entries(after).reduce((sum, [kind, n]) => sum + n - (before[index].requests[kind] ?? 0), 0);
      });
      const mean = PAYMENTS / SHARDS;
      const wide = [0, 0];
      for (let i = 0; i < 10_000; i++) wide[shardOf(`shard-pay-${i}`, SHARDS)]++;
      console.log(
        `shards: payments per shard ${perShard.join(', ')} (max/mean ${(Math.max(...perShard) / mean).toFixed(2)}; ` +
          `over 10,000 such ids ${wide.join(', ')}, max/mean ${(Math.max(...wide) / 5_000).toFixed(3)}); ` +
          `hub requests ${requests.join(', ')} (per payment ${requests.map((r, i) => (r / perShard[i]).toFixed(1)).join(', ')}, idle polling included)`,
      );
      for (let index = 0; index < SHARDS; index++) expect(requests[index]).toBeGreaterThan(0);
    } finally {
      for (const shard of shards.reverse()) {
        await shard.close();
        await shard.counter.stop();
        await shard.table.stop();
      }
      await provider.stop();
    }
  },
  REAL_ENGINE_TIMEOUT_MS,
);
