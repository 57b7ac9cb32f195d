import { rewardsFromSettings, rewardsHandler } from '../../src/app/rewards';
import { registerRewardsFunction, REWARDS_FUNCTION } from '../../src/app/rewardsFunction';
import { loadSettings } from '../../src/config/settings';
import { FailureStrikes } from '../../src/messaging/failureStrikes';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { resubmissionOf } from '../../src/messaging/resubmission';
import type { RewardEvent } from '../../src/rewards/rewardEvent';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger, type BatchApplied } from '../../src/rewards/RewardsLedger';
import type { RpcInvocationRequest, RpcTypedData } from '../../tools/local/host/WorkerHost';
import { WorkerHost } from '../../tools/local/host/WorkerHost';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';

/**
 * Issue 44.3 and 44.9: binary-mode CloudEvents (the data is the body, the identity is in the `cloudEvents:*`
 * application properties). The trigger must bind `dataType: 'binary'`: as strings the host drops empty bodies
 * (`ToRpcStringArray` without `IncludeEmptyEntriesInMessagePayload`) and keeps their metadata, so every binary event of
 * the batch is parked `missing-event-id`. A parked event keeps its identity (the properties) and the bytes delivered,
 * so it can be resubmitted under the same identity.
 */

const azuriteOf = useAzurite();

/** A binary-mode event: its data as the body, its attributes as `cloudEvents:*` properties. */
const binary = (id: string, body: Buffer | string) => ({
  body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
  properties: { 'cloudEvents:specversion': '1.0', 'cloudEvents:type': 'PaymentSucceeded', 'cloudEvents:source': '/payments', 'cloudEvents:id': id },
});
const payment = (paymentId: string, customerId: string, amount = 1000) => JSON.stringify({ paymentId, customerId, amount, currency: 'EUR' });

/**
 * The batch as the host sends it for the binding's declared `dataType` (`GrpcMessageConversionExtensions.ToRpc`):
 * `binary` -> `collectionBytes` (empty entries kept); anything else -> `collectionString`, empty entries dropped.
 */
function hostBatch(worker: WorkerHost, events: ReadonlyArray<{ body: Buffer; properties: Record<string, string> }>, first: number): RpcInvocationRequest {
  const [binding, declared] = Object.entries(worker.registrations.get(REWARDS_FUNCTION)!.metadata.bindings).find(([, b]) => b.type === 'eventHubTrigger')!;
  const data: RpcTypedData =
    declared.dataType === 'binary'
      ? { collectionBytes: { bytes: events.map((e) => new Uint8Array(e.body)) } }
      : { collectionString: { string: events.map((e) => e.body.toString('utf8')).filter((text) => text !== '') } };
  const metadata = {
    PartitionContext: { FullyQualifiedNamespace: 'local', EventHubName: 'payments-succeeded', ConsumerGroup: 'rewards', PartitionId: '2' },
    SequenceNumberArray: events.map((_, i) => first + i),
    EnqueuedTimeUtcArray: events.map(() => '2026-12-03T10:00:00Z'),
    PropertiesArray: events.map((e) => e.properties),
  };
  return {
    inputData: [{ name: binding, data }],
    triggerMetadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, { json: JSON.stringify(v) }])),
  };
}

async function appRig() {
  const rewards = await freshTable(azuriteOf(), 'bn');
  const parked = await freshTable(azuriteOf(), 'bnp');
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    REWARDS_TABLE_NAME: rewards.tableName,
    PARKED_TABLE_NAME: parked.tableName,
  });
  const worker = WorkerHost.load(() => registerRewardsFunction(rewardsHandler(rewardsFromSettings(settings))));
  return { worker, rewards, parked };
}

test("the rewards trigger binds dataType 'binary': empty bodies are kept and the batch lines up", async () => {
  const { worker } = await appRig();
  const bindings = Object.values(worker.registrations.get(REWARDS_FUNCTION)!.metadata.bindings);
  expect(bindings.find((b) => b.type === 'eventHubTrigger')).toMatchObject({ dataType: 'binary', cardinality: 'many' });
});

test('binary CloudEvents with an empty body, non-UTF-8 bytes, a big integer and a JSON string among good ones: good ones applied, the others parked with their identity and the bytes delivered', async () => {
  const { worker, rewards, parked } = await appRig();
  const notUtf8 = Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0xc3, 0x28]);
  const bigInteger = '{"paymentId":"p-big","customerId":"ann","amount":123456789012345678901234567890,"currency":"EUR"}';
  const events = [
    binary('e-1', payment('e-1', 'ann')),
    binary('e-empty', ''),
    binary('e-2', payment('e-2', 'bo')),
    binary('e-bytes', notUtf8),
    binary('e-big', bigInteger),
    binary('e-text', '"abc"'),
    binary('e-3', payment('e-3', 'ann')),
  ];
  const report = await worker.invoke(REWARDS_FUNCTION, hostBatch(worker, events, 500));
  expect(report).toMatchObject({ applied: 3, parked: 4 });
  const ledger = new RewardsLedger(rewards);
  expect([await ledger.balanceOf('ann'), await ledger.balanceOf('bo')]).toEqual([20, 10]);
  const rows = new Map((await new ParkingStore(parked).list('rewards')).map((row) => [row.properties['cloudEvents:id'], row]));
  const expected: Array<[string, number, Buffer]> = [
    ['e-empty', 501, Buffer.alloc(0)],
    ['e-bytes', 503, notUtf8],
    ['e-big', 504, Buffer.from(bigInteger, 'utf8')],
    ['e-text', 505, Buffer.from('"abc"', 'utf8')],
  ];
  for (const [id, sequence, body] of expected) {
    const row = rows.get(id);
    expect(row).toMatchObject({ messageId: `partition "2" sequence ${sequence}`, properties: events[sequence - 500].properties });
    expect(row!.body.equals(body)).toBe(true); // the bytes delivered, not a re-serialisation
  }
});

test('a parked binary event resubmitted under its own identity (its properties and bytes) is applied once; resubmitted again it is a duplicate', async () => {
  const rewards = await freshTable(azuriteOf(), 'bs');
  const parkingTable = await freshTable(azuriteOf(), 'bsp');
  let bugFixed = false;
  class BuggyLedger extends RewardsLedger {
    override applyBatch(events: readonly RewardEvent[]): Promise<BatchApplied> {
      if (!bugFixed && events.some((e) => e.customerId === 'cy')) return Promise.reject(new TypeError('points of cy: cannot read x of undefined'));
      return super.applyBatch(events);
    }
  }
  const parking = new ParkingStore(parkingTable);
  const consumer = new RewardsConsumer({ ledger: new BuggyLedger(rewards), parking, strikes: new FailureStrikes(parkingTable) });
  const events = [binary('e-ok', payment('e-ok', 'dee')), binary('e-bug', payment('e-bug', 'cy', 4200))];
  const context = (first: number, props: Array<Record<string, unknown>>) => ({
    triggerMetadata: { partitionContext: { partitionId: '0' }, sequenceNumberArray: props.map((_, i) => first + i), propertiesArray: props },
  });
  for (let strike = 1; strike < 3; strike++) {
    await expect(
      consumer.handleBatch(
        events.map((e) => e.body),
        context(
          10,
          events.map((e) => e.properties),
        ),
      ),
    ).rejects.toThrow(/cannot read/);
  }
  expect(
    await consumer.handleBatch(
      events.map((e) => e.body),
      context(
        10,
        events.map((e) => e.properties),
      ),
    ),
  ).toMatchObject({ applied: 1, parked: 1 });
  const [row] = await parking.list('rewards');
  expect(row).toMatchObject({ reason: 'repeated-failure', properties: events[1].properties });
  bugFixed = true;
  // The operator sends the parked event again (another place in the hub): same identity, same bytes.
  const again = resubmissionOf(row);
  expect(again.body.equals(events[1].body)).toBe(true);
  expect(await consumer.handleBatch([again.body], context(40, [again.properties]))).toMatchObject({ applied: 1, duplicates: 0 });
  expect(await new RewardsLedger(rewards).balanceOf('cy')).toBe(42);
  expect(await consumer.handleBatch([again.body], context(41, [again.properties]))).toMatchObject({ applied: 0, duplicates: 1, replays: 0 });
  expect(await new RewardsLedger(rewards).balanceOf('cy')).toBe(42);
});
