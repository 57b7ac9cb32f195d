import { UsageError } from '../../tools/cli/commandLine';
import { buildRewardsPlan, expectedBalances, type RewardsPlanOptions } from '../../tools/producer/rewardEvents';
import { parseRewardsArgs, requireTarget, wantsRewards, type RewardsProducerOptions } from '../../tools/producer/rewardsArgs';
import { sendRewards } from '../../tools/producer/sendRewards';

// No network: the plan and the options only (eventSinks.ts, which builds an EventHubProducerClient, is not imported).

const parse = (argv: string[], env: Record<string, string> = {}): RewardsProducerOptions => {
  const options = parseRewardsArgs(['--kind', 'rewards', ...argv], env, 'run1');
  if (options === 'help') throw new Error('unexpected help');
  return options;
};

const planOptions = (overrides: Partial<RewardsPlanOptions> = {}): RewardsPlanOptions => ({ ...parse(['--dry-run']), ...overrides });

describe('rewards producer: the plan', () => {
  test('every event is a PaymentSucceeded CloudEvent keyed by source + payment id, partition key = its customer', () => {
    const plan = buildRewardsPlan(planOptions({ count: 25, customers: 4 }));
    expect(plan).toHaveLength(25);
    expect(new Set(plan.map((e) => e.paymentId)).size).toBe(25);
    for (const e of plan) {
      expect(e.body).toMatchObject({ specversion: '1.0', type: 'PaymentSucceeded', source: '/payments', id: e.paymentId, data: { customerId: e.customerId } });
      expect(e.partitionKey).toBe(e.customerId);
      expect(e.customerId).toMatch(/^cust-run1-[0-3]$/);
    }
  });

  test('retries: the same event again, unchanged, right after it; --retry-share picks which; the balances count each payment once', () => {
    const plan = buildRewardsPlan(planOptions({ count: 200, customers: 5, retries: 2, retryShare: 0.25 }));
    const retries = plan.filter((e) => e.sendReason === 'retry');
    expect(retries.length % 2).toBe(0);
    expect(retries.length / 2).toBeGreaterThan(25); // about 50 of 200 retried, twice each
    expect(retries.length / 2).toBeLessThan(75);
    for (const [i, e] of plan.entries()) if (e.sendReason === 'retry') expect(plan[i - 1]).toMatchObject({ paymentId: e.paymentId, body: e.body });
    const distinct = plan.filter((e) => e.sendReason === 'original');
    const sum = (list: typeof plan) => list.reduce((n, e) => n + e.points, 0);
    expect([...expectedBalances(plan).values()].reduce((a, b) => a + b, 0)).toBe(sum(distinct));
    expect(sum(plan)).toBeGreaterThan(sum(distinct)); // counting the retries would be wrong
  });

  test('binary mode: cloudEvents:* properties carry the identity, the body is the data', () => {
    const [event] = buildRewardsPlan(planOptions({ count: 1, mode: 'binary' }));
    expect(event.properties).toMatchObject({ 'cloudEvents:type': 'PaymentSucceeded', 'cloudEvents:source': '/payments', 'cloudEvents:id': event.paymentId });
    expect(event.body).toEqual(expect.objectContaining({ paymentId: event.paymentId, customerId: event.customerId, currency: 'EUR' }));
  });

  test('the same seed gives the same plan; another seed another one', () => {
    expect(buildRewardsPlan(planOptions({ seed: 7 }))).toEqual(buildRewardsPlan(planOptions({ seed: 7 })));
    expect(buildRewardsPlan(planOptions({ seed: 7 }))).not.toEqual(buildRewardsPlan(planOptions({ seed: 8 })));
  });
});

describe('rewards producer: arguments', () => {
  test('--kind rewards is routed here; the Service Bus kinds are not', () => {
    expect(wantsRewards(['--kind', 'rewards'])).toBe(true);
    expect(wantsRewards(['--kind=rewards'])).toBe(true);
    expect(wantsRewards(['--kind', 'payments'])).toBe(false);
  });

  test('defaults, and the hub from REWARDS_EVENT_HUB_NAME', () => {
    expect(parse(['--dry-run'])).toMatchObject({
      count: 10,
      customers: 3,
      retries: 0,
      mode: 'structured',
      hub: 'payments-succeeded',
      target: undefined,
      dryRun: true,
    });
    expect(parse(['--dry-run'], { REWARDS_EVENT_HUB_NAME: 'other' }).hub).toBe('other');
  });

  test('--namespace (or EVENTHUB_FULLY_QUALIFIED_NAMESPACE) selects DefaultAzureCredential; EVENTHUB_CONNECTION_STRING the emulator', () => {
    expect(parse(['--namespace', 'evhns-abc123']).target).toEqual({
      kind: 'identity',
      fullyQualifiedNamespace: 'evhns-abc123.servicebus.windows.net',
      hub: 'payments-succeeded',
    });
    expect(parse([], { EVENTHUB_FULLY_QUALIFIED_NAMESPACE: 'evhns-x1y2z.servicebus.windows.net' }).target).toMatchObject({ kind: 'identity' });
    expect(parse([], { EVENTHUB_CONNECTION_STRING: 'Endpoint=sb://localhost;UseDevelopmentEmulator=true' }).target).toMatchObject({ kind: 'connectionString' });
  });

  test('bad options are refused with their names; nothing to send to without --dry-run is refused', async () => {
    expect(() => parse(['--count', '0', '--mode', 'xml', '--dry-run'])).toThrow(
      /--count must be an integer from 1 to 100000.*--mode must be one of structured, binary/,
    );
    expect(() => parse(['--retry-share', '0.5', '--dry-run'])).toThrow(/--retry-share needs --retries/);
    expect(() => parse(['--namespace', 'not a host'])).toThrow(/not an Event Hubs namespace/);
    expect(() => requireTarget(parse([]))).toThrow(UsageError);
    await expect(sendRewards(['--kind', 'rewards'], {}, 'r', () => undefined)).rejects.toThrow(/no Event Hubs to send to.*EVENTHUB_FULLY_QUALIFIED_NAMESPACE/);
  });

  test('--dry-run prints every event and the balance each customer must end with, and sends nothing', async () => {
    const lines: string[] = [];
    expect(await sendRewards(['--kind', 'rewards', '--count', '3', '--customers', '1', '--retries', '1', '--dry-run'], {}, 'r', (l) => lines.push(l))).toBe(0);
    const events = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { sendReason: string; body: { data: { amount: number } } });
    expect(events.map((e) => e.sendReason)).toEqual(['original', 'retry', 'original', 'retry', 'original', 'retry']);
    const points = events.filter((e) => e.sendReason === 'original').reduce((n, e) => n + Math.floor(e.body.data.amount / 100), 0);
    expect(lines).toContain('dry run: 6 events for hub payments-succeeded, run r; nothing sent');
    expect(lines).toContain(`expected balance cust-r-0: ${points} points`);
  });
});
