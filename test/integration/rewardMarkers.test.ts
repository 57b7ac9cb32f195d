import type { TableClient } from '@azure/data-tables';
import { InvocationContext } from '@azure/functions';
import { expiryTimerFromSettings } from '../../src/app/expiryTimer';
import { rewardsFromSettings } from '../../src/app/rewards';
import { loadSettings } from '../../src/config/settings';
import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { assertMarkersOutliveReplay, sweepRewardMarkers } from '../../src/lifecycle/rewardMarkers';
import { FailureStrikes } from '../../src/messaging/failureStrikes';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { useAzurite } from '../support/azurite';
import { tableLimitViolations } from '../support/tableLimits';
import { FakeClock, freshTable } from '../support/tables';

const DAY_MS = 86_400_000;
const azuriteOf = useAzurite();

const cloudEvent = (paymentId: string, customerId: string, amount = 1000) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id: `evt-${paymentId}`,
  data: { paymentId, customerId, amount, currency: 'EUR' },
});

/** The kinds of the rows the consumer writes per event and customer (not its bookkeeping: identity layout, sweep checkpoint). */
async function kinds(table: TableClient): Promise<string[]> {
  const found: string[] = [];
  for await (const row of table.listEntities<{ kind: string }>()) if (!['identity-layout', 'sweep-checkpoint'].includes(row.kind)) found.push(row.kind);
  return found.sort();
}

describe('rewards markers expire after what can replay them (the hub retention + 1 day), swept by the expiry timer', () => {
  test('start check: markers kept shorter than the hub retention + 1 day refuse to start the consumer; the Bicep default (7 + 1) passes', () => {
    expect(assertMarkersOutliveReplay({ REWARDS_EVENT_HUB_RETENTION_DAYS: 7, REWARDS_MARKER_RETENTION_DAYS: 8 })).toBe(8 * DAY_MS);
    const short = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString, REWARDS_MARKER_RETENTION_DAYS: '7' });
    expect(() => rewardsFromSettings(short)).toThrow(ConfigurationError);
    expect(() => rewardsFromSettings(short)).toThrow(/REWARDS_MARKER_RETENTION_DAYS \(7 days\) is shorter .* raise it to at least 8/);
  });

  test('the sweep deletes marker and identity rows past retention, keeps balances and younger markers; a replay within retention still counts once', async () => {
    const table = await freshTable(azuriteOf(), 'rm');
    const clock = new FakeClock();
    const consumer = new RewardsConsumer({ ledger: new RewardsLedger(table, clock), parking: new ParkingStore(await freshTable(azuriteOf(), 'pk'), clock) });
    const old = [cloudEvent('o1', 'ann'), cloudEvent('o2', 'bo')];
    await consumer.handleBatch(old);
    clock.advance(5 * DAY_MS);
    const young = [cloudEvent('y1', 'ann')];
    await consumer.handleBatch(young);
    clock.advance(4 * DAY_MS); // the old ones are 9 days old, the young one 4
    expect(await kinds(table)).toEqual(['reward-balance', 'reward-balance', ...Array(3).fill('reward-event'), ...Array(3).fill('reward-identity')]);
    const run = await sweepRewardMarkers(table, { cutoffMs: clock.nowMs() - 8 * DAY_MS, budgetMs: 60_000, clock });
    expect(run).toMatchObject({ scanned: 4, deleted: 4, stoppedByBudget: false });
    expect(await kinds(table)).toEqual(['reward-balance', 'reward-balance', 'reward-event', 'reward-identity']);
    expect(await consumer.handleBatch(young)).toMatchObject({ applied: 0, duplicates: 1 }); // within retention: still a duplicate
    expect(await new RewardsLedger(table).balanceOf('ann')).toBe(20);
    expect(tableLimitViolations).toEqual([]);
  });

  test('the expiry timer runs it on each tick (one log line), within its budget', async () => {
    const rewards = await freshTable(azuriteOf(), 'rt');
    const idempotency = await freshTable(azuriteOf(), 'it');
    const clock = new FakeClock();
    const parked = await freshTable(azuriteOf(), 'pk');
    const consumer = new RewardsConsumer({ ledger: new RewardsLedger(rewards, clock), parking: new ParkingStore(parked, clock) });
    await consumer.handleBatch([cloudEvent('t1', 'cy'), cloudEvent('t2', 'cy')]);
    // Failure strikes beside the parked events: an old one of the rewards consumer (goes), one of another consumer's
    // partition (not this sweep's), and one struck within retention (stays).
    const strikes = new FailureStrikes(parked, clock);
    await strikes.record('rewards', 'p0@10', 'Error: old');
    await strikes.record('orders', 'p0@10', 'Error: old');
    clock.advance(8 * DAY_MS + 1);
    await strikes.record('rewards', 'p0@20', 'Error: young');
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
      IDEMPOTENCY_TABLE_NAME: idempotency.tableName,
      REWARDS_TABLE_NAME: rewards.tableName,
      PARKED_TABLE_NAME: parked.tableName,
    });
    const logs: string[] = [];
    const context = new InvocationContext({ invocationId: 'i1', functionName: 'expiryTimer', logHandler: (_level, ...args) => logs.push(args.join(' ')) });
    await expiryTimerFromSettings(settings, { clock })(
      { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } },
      context,
    );
    expect(logs.join('\n')).toMatch(/rewards marker sweep: deleted 4 of 4 past retention/);
    expect(await kinds(rewards)).toEqual(['reward-balance']);
    expect(logs.join('\n')).toMatch(/rewards failure strikes sweep: deleted 1 of 1 past retention/);
    const left: string[] = [];
    for await (const row of parked.listEntities<{ signature: string }>()) left.push(`${row.partitionKey} ${row.signature}`);
    expect(left.sort()).toEqual(['strikes-orders Error: old', 'strikes-rewards Error: young']);
  });
});
