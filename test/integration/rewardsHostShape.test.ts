import { rewardsFromSettings, rewardsHandler } from '../../src/app/rewards';
import { registerRewardsFunction, REWARDS_FUNCTION } from '../../src/app/rewardsFunction';
import { createTableClient } from '../../src/app/tableClient';
import { loadSettings } from '../../src/config/settings';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { rpcBatchRequest, type BatchDataType } from '../../tools/local/eventHubs/workerBatch';
import { WorkerHost } from '../../tools/local/host/WorkerHost';
import { useAzurite } from '../support/azurite';
import { tableLimitViolations, withTableLimits } from '../support/tableLimits';
import { freshTable } from '../support/tables';

/**
 * Hostile events among good ones, in the host's own batch shape: the registered function invoked as the Node worker
 * invokes it (`rpcBatchRequest`: the bodies as one `collectionString` or `collectionBytes`, PascalCase trigger metadata,
 * turned into the handler's arguments by `@azure/functions` itself: `tryJsonParse` of each text), on a real Azurite,
 * every Table write of the app's own clients checked against Azure's limits (`withTableLimits`).
 */
const azuriteOf = useAzurite();

const good = (n: number, customerId: string) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id: `good-${n}`,
  data: { paymentId: `good-${n}`, customerId, amount: 1000, currency: 'EUR' },
});

/** 1,000,000 bytes of event: a CloudEvent whose data carries a long note (the hub's limit is 1 MB). */
const oneMegabyte = () => {
  const event = { ...good(900, 'mia'), id: 'big-1', data: { ...good(900, 'mia').data, paymentId: 'big-1', note: '' } };
  event.data.note = 'n'.repeat(1_000_000 - JSON.stringify(event).length);
  return event;
};
/** 10 KB of body: 5,000 nested arrays. */
const deepArrays = '['.repeat(5000) + ']'.repeat(5000);
/** A CloudEvent whose data nests 5,000 deep. */
const deepData = `{"specversion":"1.0","type":"PaymentSucceeded","source":"/payments","id":"deep-data","data":${deepArrays}}`;

async function rig() {
  const rewards = await freshTable(azuriteOf(), 'hs');
  const parked = await freshTable(azuriteOf(), 'hp');
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    REWARDS_TABLE_NAME: rewards.tableName,
    PARKED_TABLE_NAME: parked.tableName,
  });
  const checked: string[] = [];
  const tableClient = (name: string) => (checked.push(name), withTableLimits(createTableClient(settings, {}, name)));
  const worker = WorkerHost.load(() => registerRewardsFunction(rewardsHandler(rewardsFromSettings(settings, { tableClient }))));
  return { worker, rewards, parked, checked };
}

const metadataOf = (count: number, first: number) => ({
  partitionContext: { fullyQualifiedNamespace: 'local', eventHubName: 'payments-succeeded', consumerGroup: 'rewards', partitionId: '1' },
  sequenceNumberArray: Array.from({ length: count }, (_, i) => first + i),
  offsetArray: Array.from({ length: count }, (_, i) => String(4096 * (first + i))),
  enqueuedTimeUtcArray: Array.from({ length: count }, () => new Date().toISOString()),
  propertiesArray: Array.from({ length: count }, () => ({})),
});

describe.each<BatchDataType>(['string', 'binary'])(
  'hostile events in the host batch shape (%s): parked with their reason, the good ones applied',
  (dataType) => {
    test('a 1 MB event, a 10 KB body of 5,000 nested arrays and a CloudEvent whose data nests 5,000 deep, among 4 good events', async () => {
      const { worker, rewards, parked, checked } = await rig();
      const binding = worker.bindingName(REWARDS_FUNCTION, 'eventHubTrigger');
      const big = oneMegabyte();
      const bodies: unknown[] = [good(1, 'ann'), big, good(2, 'ann'), deepArrays, good(3, 'bo'), deepData, good(4, 'bo')];
      expect(Buffer.byteLength(JSON.stringify(big))).toBe(1_000_000);
      const report = (await worker.invoke(REWARDS_FUNCTION, rpcBatchRequest(binding, bodies, metadataOf(7, 100), dataType))) as Record<string, number>;
      expect(report).toMatchObject({ applied: 4, parked: 3 });
      const ledger = new RewardsLedger(rewards);
      expect([await ledger.balanceOf('ann'), await ledger.balanceOf('bo'), await ledger.balanceOf('mia')]).toEqual([20, 20, 0]);
      const rows = await new ParkingStore(parked).list('rewards');
      const byPlace = new Map(rows.map((row) => [row.messageId, row]));
      expect(byPlace.get('partition "1" sequence 101')).toMatchObject({ reason: 'oversized', bodyTruncated: false });
      expect(JSON.parse(byPlace.get('partition "1" sequence 101')!.body.toString('utf8'))).toEqual(big); // kept whole
      expect(byPlace.get('partition "1" sequence 103')).toMatchObject({ reason: 'missing-event-id' });
      expect(byPlace.get('partition "1" sequence 103')!.body.toString('utf8')).toBe(deepArrays);
      expect(byPlace.get('partition "1" sequence 105')).toMatchObject({ reason: 'invalid-schema' });
      expect(byPlace.get('partition "1" sequence 105')!.body.toString('utf8')).toBe(deepData);
      // The replay from the checkpoint: nothing applied twice, the same rows parked again (overwritten, not added).
      const replay = (await worker.invoke(REWARDS_FUNCTION, rpcBatchRequest(binding, bodies, metadataOf(7, 100), dataType))) as Record<string, number>;
      expect(replay).toMatchObject({ applied: 0, duplicates: 4, replays: 4, parked: 3 });
      expect(await new ParkingStore(parked).list('rewards')).toHaveLength(3);
      expect(checked).toEqual(expect.arrayContaining([rewards.tableName, parked.tableName])); // the app's own clients, checked
      expect(tableLimitViolations).toEqual([]);
    });

    test('other hostile events (not JSON, blank, an id past 8,192 characters, the longest id) and two hosts racing on overlapping batches with one identity under two customers', async () => {
      const { worker, rewards, parked } = await rig();
      const settings = loadSettings({
        IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
        REWARDS_TABLE_NAME: rewards.tableName,
        PARKED_TABLE_NAME: parked.tableName,
      });
      const tableClient = (name: string) => withTableLimits(createTableClient(settings, {}, name));
      const other = WorkerHost.load(() => registerRewardsFunction(rewardsHandler(rewardsFromSettings(settings, { tableClient }))));
      const binding = worker.bindingName(REWARDS_FUNCTION, 'eventHubTrigger');
      const longest = { ...good(50, 'ann'), id: 'i'.repeat(8000) };
      const tooLong = { ...good(51, 'ann'), id: 'i'.repeat(9000) };
      const hostile: unknown[] = [good(10, 'ann'), '\u0000not json{', ' ', longest, tooLong, good(11, 'bo')];
      const first = (await worker.invoke(REWARDS_FUNCTION, rpcBatchRequest(binding, hostile, metadataOf(6, 0), dataType))) as Record<string, number>;
      expect(first).toMatchObject({ applied: 3, parked: 3 });
      // Two hosts at once (a partition handover): overlapping batches, and identity shared-<round> under two customers.
      for (let round = 0; round < 6; round++) {
        const shared = (customerId: string, amount: number) => ({
          ...good(200 + round, customerId),
          id: `shared-${round}`,
          data: { ...good(200 + round, customerId).data, amount },
        });
        const a = [good(100 + round, 'cy'), shared('dee', 1000), good(300 + round, 'cy')];
        const b = [good(300 + round, 'cy'), shared('eve', 2000), good(400 + round, 'cy')];
        await Promise.all([
          worker.invoke(REWARDS_FUNCTION, rpcBatchRequest(binding, a, metadataOf(3, 10 + 3 * round), dataType)),
          other.invoke(REWARDS_FUNCTION, rpcBatchRequest(binding, b, metadataOf(3, 8 + 3 * round), dataType)),
        ]);
      }
      const ledger = new RewardsLedger(rewards);
      expect(await ledger.balanceOf('cy')).toBe(3 * 6 * 10); // 18 distinct events of 10 points, none twice
      expect((await ledger.balanceOf('dee')) / 10 + (await ledger.balanceOf('eve')) / 20).toBe(6); // one payload per shared identity
      const reasons = (await new ParkingStore(parked).list('rewards')).map((row) => row.reason).sort();
      expect(reasons).toEqual([...Array(6).fill('key-reused'), 'missing-event-id', 'missing-event-id', 'missing-event-id']);
      expect(tableLimitViolations).toEqual([]);
    });
  },
);
