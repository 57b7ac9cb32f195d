import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SIZING_ROWS } from '../../tools/infra/sizingRows';
import { bindingHubLimit, bindingLimit, limitsOf } from '../../tools/sizing/hubLimits';
import { EDGE_REQUESTS_PER_PAYMENT, paymentLoadOf, type PaymentLoad, type SizingRun } from '../../tools/sizing/paymentLoad';
import { accountRequestsPerSecond, FigureKind } from '../../tools/sizing/publishedLimits';
import { sizingPlanFor } from '../../tools/sizing/sizingPlan';

/**
 * The sizing from every limit (issue 63, tools/sizing/): every limit carries its figure's source and kind, the smallest
 * binds, the region sets the account's rate, the shared namespace binds all shards together, and the Bicep rows
 * `npm run infra:build` compiles (tools/infra/sizingRows.ts) are what the sizing computes from the run of record.
 */
const RUN_OF_RECORD = join(__dirname, '..', '..', 'docs', 'bench', 'payments-handoff-2026-12-07b.json');
const runOfRecord = () => (JSON.parse(readFileSync(RUN_OF_RECORD, 'utf8')) as { runs: { handoff: SizingRun } }).runs.handoff;

/** A payment's load as the 2026-12-07 run counted it, rounded. */
const LOAD: PaymentLoad = {
  design: 'handoff',
  payments: 64,
  accountRequestsWithIdle: 41.6,
  accountRequests: 34,
  edgeRequests: EDGE_REQUESTS_PER_PAYMENT,
  workItemMessages: 1,
  controlMessages: 5,
  orchestrationEpisodes: 3,
  entityBatches: 2,
  activities: 1,
  workItems: 6,
  serviceBusCredits: 3,
  triggerCpuMs: undefined,
};

describe('sizing: every limit, with its source', () => {
  test('seven limits, each with a figure whose source is a URL and whose kind is said; the smallest per hub binds', () => {
    const limits = limitsOf(LOAD, { region: 'swedencentral', partitions: 4, serviceBusUnits: 0, coresPerInstance: 1 });
    expect(limits.map((l) => l.name)).toEqual([
      'storage account',
      'work-item queue',
      'control queues',
      'Durable orchestrations (Azure Storage provider)',
      'Flex instances of one app',
      "Service Bus Standard namespace (every shard's queue)",
      'Flex regional quota (subscription)',
    ]);
    for (const l of limits) for (const f of l.figures) expect(f.source).toMatch(/https:\/\/|none published|^infra\//);
    expect(limits.flatMap((l) => l.figures.map((f) => f.kind))).toContain(FigureKind.Recalled);
    const hub = bindingHubLimit(limits);
    expect(hub.name).toBe('Durable orchestrations (Azure Storage provider)');
    expect(hub.paymentsPerSecond).toBe(Math.min(...limits.filter((l) => l.scope === 'hub').map((l) => l.paymentsPerSecond)));
    // The account counts the hub's requests without idle polls plus the webhook's and the API's records, spread by key.
    expect(limits[0].paymentsPerSecond).toBeCloseTo(40_000 / (34 + 7), 6);
  });

  test('the region is an input: 40,000 requests a second in a listed region, 20,000 elsewhere', () => {
    expect(accountRequestsPerSecond('swedencentral').value).toBe(40_000);
    expect(accountRequestsPerSecond('East US').value).toBe(40_000);
    expect(accountRequestsPerSecond('westcentralus').value).toBe(20_000);
    const at = (region: string) => limitsOf(LOAD, { region, partitions: 4, serviceBusUnits: 0, coresPerInstance: 1 })[0].paymentsPerSecond;
    expect(at('westcentralus')).toBeCloseTo(at('swedencentral') / 2, 6);
  });

  test('Service Bus Standard is one namespace for every shard: ten shards carry no more than its 1,000 credits / 3 a payment', () => {
    const limits = limitsOf(LOAD, { region: 'swedencentral', partitions: 16, serviceBusUnits: 0, coresPerInstance: 1 });
    const ten = bindingLimit(limits, 10);
    expect(ten.limit.name).toMatch(/^Service Bus Standard/);
    expect(ten.paymentsPerSecond).toBeCloseTo(1000 / 3, 6);
    expect(bindingLimit(limitsOf(LOAD, { region: 'swedencentral', partitions: 16, serviceBusUnits: 4, coresPerInstance: 1 }), 10).limit.name).not.toMatch(
      /Service Bus/,
    );
  });

  test('the idle polls are left out of the account count: (requests - idle rate x seconds) / payments', () => {
    const run: SizingRun = {
      design: 'handoff',
      payments: 10,
      seconds: { finished: 5 },
      storage: {
        workload: { requests: { 'durable.queue.control.put': 50, 'durable.queue.workitems.put': 10, 'app.table.idempotency.batch': 340 } },
        idle: { seconds: 10, requests: { 'durable.queue.control.get': 20 } },
      },
      serviceBus: { sends: 10, receives: 10, completes: 10 },
      durable: { byFunction: { chargePayment: 30, paymentCharge: 20, chargeProvider: 10 } },
    };
    const load = paymentLoadOf(run);
    expect(load.accountRequestsWithIdle).toBe(40);
    expect(load.accountRequests).toBe((400 - 2 * 5) / 10);
    expect([load.workItemMessages, load.controlMessages, load.workItems, load.serviceBusCredits]).toEqual([1, 5, 6, 3]);
  });
});

describe('sizing: the table and the template', () => {
  test('the Bicep rows infra:build compiles are the sizing of the run of record (shards, partitions, Service Bus tier and units)', () => {
    const load = paymentLoadOf(runOfRecord());
    for (const row of SIZING_ROWS) {
      const plan = sizingPlanFor(load, row.target, 'swedencentral');
      expect({ target: row.target, shards: plan.shards, partitions: plan.partitions, tier: plan.serviceBus.tier, units: plan.serviceBus.units }).toEqual({
        target: row.target,
        shards: row.shardCount,
        partitions: row.durablePartitionCount,
        tier: row.serviceBusSku,
        units: row.serviceBusMessagingUnits,
      });
      expect(plan.shards).toBeLessThanOrEqual(64);
    }
  });

  test('10,000 payments a second fit the raised shard cap (64) and say what they need beyond the template: a regional quota increase', () => {
    const plan = sizingPlanFor(LOAD, 10_000, 'swedencentral');
    expect(plan.shards).toBeLessThanOrEqual(64);
    expect(plan.serviceBus).toEqual({ tier: 'Premium', units: 32 });
    expect(plan.problems.join()).toMatch(/regional Flex quota/);
    expect(plan.problems.join()).not.toMatch(/more than the 64/);
  });
});
