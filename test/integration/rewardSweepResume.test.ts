import { TableClient, type TransactionAction } from '@azure/data-tables';
import { InvocationContext } from '@azure/functions';
import { randomBytes } from 'node:crypto';
import { rewardMarkerSweepFromSettings } from '../../src/app/rewardMarkerSweep';
import { loadSettings } from '../../src/config/settings';
import { sweepRewardMarkers } from '../../src/lifecycle/rewardMarkers';
import { FailureStrikes } from '../../src/messaging/failureStrikes';
import { useAzurite } from '../support/azurite';
import { TableRowCounter } from '../support/tableRowCounter';
import { FakeClock, freshTable } from '../support/tables';

/**
 * Issue 44.8: a budget-limited sweep resumes where the last one stopped (a checkpoint row holds the query's
 * continuation), so in Azure, where a filtered scan walks every row (customer partitions `c-*` sort before the identity
 * partitions `i-*`, which feed the identity reads), a large table is swept to its end over several runs instead of the
 * same first rows each run. And the failure-strike rows are swept even when the markers' sweep spends the budget.
 */

const azuriteOf = useAzurite();
const DAY_MS = 86_400_000;

/** A clock that moves 1 s each time it is read: a budget of n s lets a run read the clock about n times. */
class TickingClock extends FakeClock {
  override nowMs(): number {
    this.now += 1_000;
    return this.now;
  }
}

async function seedOld(client: TableClient, partitionKey: string, rows: number, kind: string, appliedAtMs: number): Promise<void> {
  for (let i = 0; i < rows; i += 100) {
    const actions = Array.from({ length: Math.min(100, rows - i) }, (): TransactionAction => [
      'create',
      { partitionKey, rowKey: `e-${randomBytes(16).toString('hex')}`, kind, appliedAtMs: { value: String(appliedAtMs), type: 'Int64' } },
    ]);
    await client.submitTransaction(actions);
  }
}

test('a sweep stopped by its budget resumes from its checkpoint (the next query carries the continuation), and the scan ends at the identity partitions', async () => {
  const name = `sw${randomBytes(6).toString('hex')}`;
  const direct = TableClient.fromConnectionString(azuriteOf().connectionString, name, { allowInsecureConnection: true });
  await direct.createTable();
  const clock = new TickingClock();
  const old = clock.now - 9 * DAY_MS;
  for (let c = 0; c < 3; c++) await seedOld(direct, `c-${c}`, 1000, 'reward-event', old);
  await seedOld(direct, 'i-0', 500, 'reward-identity', old);
  const counter = await TableRowCounter.start(azuriteOf().connectionString);
  try {
    const client = TableClient.fromConnectionString(counter.connectionString, name, { allowInsecureConnection: true });
    const cutoffMs = clock.now - 8 * DAY_MS;
    const runs = [];
    for (let run = 0; run < 6; run++) {
      counter.take();
      runs.push({ report: await sweepRewardMarkers(client, { cutoffMs, budgetMs: 2_500, clock }), queries: counter.takeQueryUrls() });
      if (!runs.at(-1)!.report.stoppedByBudget) break;
    }
    // Each run reads one page of 1,000 before its budget is spent; every run after the first starts at the continuation.
    expect(runs.length).toBeGreaterThan(1);
    for (const { queries } of runs.slice(1)) expect(queries[0]).toMatch(/NextPartitionKey=/);
    expect(runs.reduce((sum, r) => sum + r.report.deleted, 0)).toBe(3500);
    expect(runs.at(-1)!.report.stoppedByBudget).toBe(false);
    let left = 0;
    for await (const row of direct.listEntities<{ kind: string }>()) if (row.kind !== 'sweep-checkpoint') left++;
    expect(left).toBe(0);
  } finally {
    await counter.stop();
  }
});

test('strike rows are swept even when the markers sweep spends the whole budget', async () => {
  const rewards = await freshTable(azuriteOf(), 'sr');
  const parked = await freshTable(azuriteOf(), 'sp');
  const clock = new FakeClock();
  await new FailureStrikes(parked, clock).record('rewards', 'partition 0 sequence 1', 'Error: old');
  clock.advance(9 * DAY_MS);
  const ticking = new TickingClock(clock.now);
  await seedOld(rewards, 'c-0', 1500, 'reward-event', clock.now - 9 * DAY_MS);
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    REWARDS_TABLE_NAME: rewards.tableName,
    PARKED_TABLE_NAME: parked.tableName,
  });
  const logs: string[] = [];
  const context = new InvocationContext({ invocationId: 'i', functionName: 'expiryTimer', logHandler: (_l, ...args) => logs.push(args.join(' ')) });
  await rewardMarkerSweepFromSettings(settings, { clock: ticking })(context, 5_000);
  expect(logs.join('\n')).toMatch(/rewards failure strikes sweep: deleted 1 of 1/);
  expect(logs.join('\n')).toMatch(/rewards marker sweep: deleted 1000 of 1000 past retention, \d+ requests \(budget spent; resumes at the checkpoint\)/);
});
