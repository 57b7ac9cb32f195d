import type { TableClient } from '@azure/data-tables';
import { BatchAttempts } from '../../src/messaging/batchAttempts';
import { FailureStrikes } from '../../src/messaging/failureStrikes';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import type { RewardEvent } from '../../src/rewards/rewardEvent';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger, type BatchApplied } from '../../src/rewards/RewardsLedger';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';
import { inMemoryTelemetry } from '../support/telemetry';

/**
 * Issue 44.10: an invocation that ends without an answer (the host's function timeout cancels it, or the worker
 * crashes) throws nothing in the function, so it never reached the strikes: a batch that always times out was retried
 * forever in silence. Here each "invocation" is a consumer on a host of its own (same tables) whose answer is waited
 * for 1.5 s, then given up (the timeout: the next invocation replays the same batch from the same checkpoint).
 */

const azuriteOf = useAzurite();
jest.setTimeout(60_000);

const cloudEvent = (id: string, customerId: string) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id,
  data: { paymentId: id, customerId, amount: 500, currency: 'EUR' },
});
const context = (sequence: number, count: number) => ({
  triggerMetadata: { partitionContext: { partitionId: '1' }, sequenceNumberArray: Array.from({ length: count }, (_, i) => sequence + i) },
});

/** A ledger that never answers for one customer's events (a call that hangs past the function timeout). */
class HangingLedger extends RewardsLedger {
  override applyBatch(events: readonly RewardEvent[]): Promise<BatchApplied> {
    return events.some((event) => event.customerId === 'c-hang') ? new Promise<never>(() => undefined) : super.applyBatch(events);
  }
}

/** The invocation's answer, or 'no answer' when it did not come within the (test's) function timeout. */
async function invoke(run: Promise<unknown>): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve('no answer'), 1_500)));
  try {
    return await Promise.race([run.catch((error: Error) => `threw ${error.message}`), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function rig() {
  const table = await freshTable(azuriteOf(), 'na');
  const parkingTable = await freshTable(azuriteOf(), 'nap');
  const t = inMemoryTelemetry();
  /** A new host for each invocation: nothing carried over in memory. */
  const host = (ledger: (client: TableClient) => RewardsLedger) =>
    new RewardsConsumer({
      ledger: ledger(table),
      parking: new ParkingStore(parkingTable),
      strikes: new FailureStrikes(parkingTable),
      attempts: new BatchAttempts(parkingTable),
      telemetry: t.telemetry,
    });
  return { table, parkingTable, t, host };
}

test('a batch whose invocation never answers is seen again, counted, run event by event, and the event it hangs on parked: the partition moves', async () => {
  const { table, parkingTable, t, host } = await rig();
  const batch = [cloudEvent('e-1', 'c-1'), cloudEvent('e-2', 'c-2'), cloudEvent('e-3', 'c-hang'), cloudEvent('e-4', 'c-1')];
  const answers: unknown[] = [];
  for (let invocation = 0; invocation < 6 && answers.at(-1) === undefined; invocation++) {
    const answer = await invoke(host((client) => new HangingLedger(client)).handleBatch(batch, context(100, batch.length)));
    if (answer !== 'no answer') answers.push(answer);
    else answers.push(undefined);
  }
  // 3 invocations without an answer (strikes), the 4th runs event by event and hangs on e-3, the 5th parks e-3 and answers.
  expect(answers.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
  expect(answers[4]).toMatchObject({ applied: 1, duplicates: 2, parked: 1 }); // e-1, e-2 applied by the 4th before it hung
  const parked = await new ParkingStore(parkingTable).list('rewards');
  expect(parked.map((p) => [p.reason, p.messageId])).toEqual([['repeated-failure', 'partition "1" sequence 102']]);
  expect(parked[0].detail).toMatch(/without an answer \(function timeout or worker crash\) 4 times/);
  const ledger = new RewardsLedger(table);
  expect([await ledger.balanceOf('c-1'), await ledger.balanceOf('c-2'), await ledger.balanceOf('c-hang')]).toEqual([10, 5, 0]);
  expect(await t.counter('messages.batch_failures', { consumer: 'rewards', partitionId: '1', kind: 'no-answer' })).toBe(4);
  await t.shutdown();
});

test('a batch replayed after it answered (a crash after the function returned, before the checkpoint) is never a strike', async () => {
  const { parkingTable, t, host } = await rig();
  const batch = [cloudEvent('r-1', 'c-1'), cloudEvent('r-2', 'c-2')];
  for (let replay = 0; replay < 5; replay++) {
    const answer = await invoke(host((client) => new RewardsLedger(client)).handleBatch(batch, context(7, batch.length)));
    expect(answer).toMatchObject(replay === 0 ? { applied: 2 } : { duplicates: 2, replays: 2, parked: 0 });
  }
  expect(await new ParkingStore(parkingTable).list('rewards')).toEqual([]);
  expect(await t.counter('messages.batch_failures', { kind: 'no-answer' })).toBe(0);
  await t.shutdown();
});
