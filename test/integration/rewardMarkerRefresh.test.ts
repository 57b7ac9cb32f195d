import { loadSettings } from '../../src/config/settings';
import { assertMarkersOutliveReplay, sweepRewardMarkers } from '../../src/lifecycle/rewardMarkers';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/**
 * Issue 44.7: a marker must live as long as a copy of its event can still arrive. Markers aged from the first apply,
 * so a producer's resend enqueued on day 6 and read again after day 8 (a replay of that copy, a stalled reader)
 * found the marker and the identity row swept and applied twice. A duplicate copy now carries the marker (and the
 * identity row) forward to its own enqueue time. And the hub's retention and cleanup policy come from the deployed hub:
 * a policy that keeps events without a time limit (compaction) stops the consumer at start.
 */

const azuriteOf = useAzurite();
const DAY_MS = 86_400_000;

const cloudEvent = (id: string, customerId: string) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id,
  data: { paymentId: id, customerId, amount: 1000, currency: 'EUR' },
});
const at = (sequence: number, enqueuedMs: number) => ({
  triggerMetadata: { partitionContext: { partitionId: '0' }, sequenceNumberArray: [sequence], enqueuedTimeUtcArray: [new Date(enqueuedMs).toISOString()] },
});

test('a resend enqueued on day 6 keeps the marker alive past day 8: read again on day 10 it is still a duplicate', async () => {
  const table = await freshTable(azuriteOf(), 'mr');
  const clock = new FakeClock();
  const day0 = clock.now;
  const consumer = new RewardsConsumer({ ledger: new RewardsLedger(table, clock), parking: new ParkingStore(await freshTable(azuriteOf(), 'mrp'), clock) });
  expect(await consumer.handleBatch([cloudEvent('e-1', 'ann')], at(10, day0))).toMatchObject({ applied: 1 });
  // The producer sends it again on day 6 (a new copy at another place); read on day 6.
  clock.advance(6.5 * DAY_MS);
  expect(await consumer.handleBatch([cloudEvent('e-1', 'ann')], at(900, day0 + 6 * DAY_MS))).toMatchObject({ duplicates: 1 });
  // Day 9: the sweep (retention 8 days) runs.
  clock.advance(2.5 * DAY_MS);
  await sweepRewardMarkers(table, { cutoffMs: clock.now - 8 * DAY_MS, budgetMs: 60_000, clock });
  // Day 10: the day-6 copy is read again (a replay from an older checkpoint, or a reader that stalled): still a duplicate.
  clock.advance(DAY_MS);
  expect(await consumer.handleBatch([cloudEvent('e-1', 'ann')], at(900, day0 + 6 * DAY_MS))).toMatchObject({ applied: 0, duplicates: 1 });
  expect(await new RewardsLedger(table).balanceOf('ann')).toBe(10);
});

test('the hub cleanup policy comes from the deployment: compaction (no time limit) stops the consumer at start', () => {
  expect(
    assertMarkersOutliveReplay({ REWARDS_EVENT_HUB_RETENTION_DAYS: 7, REWARDS_MARKER_RETENTION_DAYS: 8, REWARDS_EVENT_HUB_CLEANUP_POLICY: 'Delete' }),
  ).toBe(8 * DAY_MS);
  for (const policy of ['Compact', 'DeleteOrCompact'] as const) {
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', REWARDS_EVENT_HUB_CLEANUP_POLICY: policy });
    expect(() => assertMarkersOutliveReplay(settings)).toThrow(ConfigurationError);
    expect(() => assertMarkersOutliveReplay(settings)).toThrow(/REWARDS_EVENT_HUB_CLEANUP_POLICY is .*no time limit/);
  }
});
