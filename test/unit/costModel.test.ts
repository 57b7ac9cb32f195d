import { costPerMillion, durableQueueOpsPerPayment, type CostLine, type CostOptions, type RunCounts } from '../../tools/cost/costModel';
import { COSMOS_RU_PER_PAYMENT, cosmosStoreLines, queueOpsForGoal, termsOf } from '../../tools/cost/costTerms';
import { diffHostCounts, hostRecordsPriced, levelFor, recordsAt, totalOf, type HostLogCount } from '../../tools/cost/hostTelemetry';
import { monthBill } from '../../tools/cost/monthView';
import { DEFAULT_PRICES, MONTHLY_GRANTS, PRICE_SOURCES, pricesWith, type Prices } from '../../tools/cost/prices';
import {
  creditsPerPayment,
  paymentsPerSecondPerShard,
  shardCost,
  shardsFor,
  standardPaymentsPerSecond,
  storageRequestsPerPayment,
} from '../../tools/cost/shards';

/** Prices that make the arithmetic readable: every unit a distinct power of ten. */
const prices: Prices = {
  tableTransaction: 1e-6,
  queueClass1: 1e-5,
  queueClass2: 1e-4,
  blobWrite: 1e-3,
  blobRead: 0,
  blobOther: 0,
  flexExecution: 1e-7,
  flexOnDemandGbSecond: 1e-2,
  flexAlwaysReadyExecutionGbSecond: 1e-3,
  flexAlwaysReadyBaselineGbSecond: 1e-4,
  serviceBusOperation: 1e-6,
  serviceBusBaseHour: 0.5,
  serviceBusPremiumUnitHour: 5,
  eventHubsThroughputUnitHour: 0.25,
  cosmosRequestUnit: 1e-3,
  appInsightsGb: 2,
};

const options: CostOptions = {
  prices,
  memoryGb: 2,
  alwaysReadyInstances: 1,
  azureMaxQueuePollingMs: 10_000,
  telemetryItemOverheadBytes: 0,
  hostTelemetryBytesPerExecution: 0,
  secondsPerMonth: 7_200,
  eventHubsThroughputUnits: 1,
};

const run: RunCounts = {
  design: 'hold',
  payments: 10,
  maxQueuePollingIntervalMs: 500,
  consumer: { executions: 10, activeInstanceMs: 5_000, durationsMs: [] },
  durable: { executions: 70, activeInstanceMs: 20_000, durationsMs: [] },
  sparse: { payments: 4, consumerActiveMsPerPayment: 1_500, durableActiveMsPerPayment: 3_000 },
  storage: {
    workload: {
      requests: {
        'app.table.idempotency.batch': 20,
        'durable.queue.control.put': 30,
        'durable.queue.workitems.put': 10,
        'durable.queue.control.emptyGet': 50,
        'durable.blob.leases.lease.renew': 10,
      },
      billing: {
        'app.table.idempotency.batch': 'transaction',
        'durable.queue.control.put': 'class1',
        'durable.queue.workitems.put': 'class1',
        'durable.queue.control.emptyGet': 'class2',
        'durable.blob.leases.lease.renew': 'write',
      },
    },
    idle: { seconds: 10, requests: { 'durable.queue.control.emptyGet': 20 }, billing: { 'durable.queue.control.emptyGet': 'class2' } },
  },
  serviceBus: { sends: 10, receives: 12, completes: 10, abandons: 2, renewals: 1 },
  telemetry: { logRecords: 20, logBytes: 10_000 },
};

const byName = (lines: readonly CostLine[], part: string): CostLine => {
  const found = lines.filter((l) => l.name.includes(part));
  if (found.length !== 1) throw new Error(`expected one line with "${part}", found ${found.length}`);
  return found[0];
};

describe('costPerMillion: dollars per million payments from the counts of one run', () => {
  const estimate = costPerMillion(run, options);
  const busy = estimate.variable.busy;

  test('storage: each kind priced by its billing class, grouped (queues by operation, control + work items together)', () => {
    expect(byName(busy, 'claim tables')).toMatchObject({ perPayment: 2, perMillion: 2e6 });
    expect(byName(busy, 'claim tables').usdPerMillion).toBeCloseTo(2e6 * 1e-6);
    expect(byName(busy, 'durable queue put').perPayment).toBe(4);
    expect(byName(busy, 'durable queue put').usdPerMillion).toBeCloseTo(4e6 * 1e-5);
    expect(byName(busy, 'durable queue emptyGet').usdPerMillion).toBeCloseTo(5e6 * 1e-4);
    expect(byName(busy, 'durable blob leases lease.renew').usdPerMillion).toBeCloseTo(1e6 * 1e-3);
  });

  test('Service Bus: sends, receives, completes, abandons and renewals, per payment', () => {
    const sb = byName(busy, 'Service Bus');
    expect(sb.perPayment).toBeCloseTo(3.5); // (10 + 12 + 10 + 2 + 1) / 10
    expect(sb.usdPerMillion).toBeCloseTo(3.5e6 * 1e-6);
  });

  test('executions: the trigger on demand, every Durable execution always ready, each at its price', () => {
    expect(byName(busy, 'Flex executions on demand').perPayment).toBe(1);
    expect(byName(busy, 'Flex executions always ready').perPayment).toBe(7);
    expect(byName(busy, 'Flex executions always ready').usdPerMillion).toBeCloseTo(7e6 * 1e-7);
  });

  test('GB-s: active instance time x memory, on-demand for the trigger, always-ready execution rate for the durable group', () => {
    // busy: 5 s x 2 GB / 10 payments = 1 GB-s; durable 20 s x 2 GB / 10 = 4 GB-s.
    expect(byName(busy, 'on-demand GB-s').perPayment).toBeCloseTo(1);
    expect(byName(busy, 'on-demand GB-s').usdPerMillion).toBeCloseTo(1e6 * 1e-2);
    expect(byName(busy, 'always-ready execution GB-s').perPayment).toBeCloseTo(4);
    expect(byName(busy, 'always-ready execution GB-s').usdPerMillion).toBeCloseTo(4e6 * 1e-3);
    // sparse: measured per payment alone: 1.5 s x 2 GB = 3 GB-s; 3 s x 2 GB = 6 GB-s.
    const sparse = estimate.variable.sparse!;
    expect(byName(sparse, 'on-demand GB-s').perPayment).toBeCloseTo(3);
    expect(byName(sparse, 'always-ready execution GB-s').perPayment).toBeCloseTo(6);
  });

  test('Application Insights: measured bytes per payment, plus the per-item and per-execution parameters when given', () => {
    expect(byName(busy, "the app's own log records").perPayment).toBeCloseTo(1_000 / 1e9);
    expect(byName(busy, "the app's own log records").usdPerMillion).toBeCloseTo((1_000 * 1e6 * 2) / 1e9);
    const more = costPerMillion(run, { ...options, telemetryItemOverheadBytes: 500, hostTelemetryBytesPerExecution: 100 });
    // (10,000 + 20 x 500) / 10 = 2,000 bytes a payment; 80 executions x 100 / 10 = 800.
    expect(byName(more.variable.busy, "the app's own log records").perPayment).toBeCloseTo(2_000 / 1e9);
    expect(byName(more.variable.busy, 'host telemetry per execution').perPayment).toBeCloseTo(800 / 1e9);
    expect(estimate.unmeasured).toEqual([expect.stringMatching(/Durable host's log records/)]);
  });

  test('fixed per month: idle polling scaled from the run interval to Azure, the always-ready baseline, Service Bus base, Event Hubs TUs', () => {
    // 20 empty gets in 10 s = 2/s at 500 ms; at 10 s: 0.1/s; x 7,200 s = 720 a month.
    const idle = byName(estimate.fixedPerMonth, 'idle polling');
    expect(idle.perMillion).toBeCloseTo(720);
    expect(idle.usdPerMillion).toBeCloseTo(720 * 1e-4);
    const baseline = byName(estimate.fixedPerMonth, 'baseline');
    expect(baseline.perMillion).toBe(14_400); // 1 instance x 2 GB x 7,200 s
    expect(baseline.usdPerMillion).toBeCloseTo(14_400 * 1e-4);
    // 7,200 s = 2 hours: Service Bus 2 x $0.5; Event Hubs 2 TUs x 2 hours x $0.25.
    expect(byName(estimate.fixedPerMonth, 'Service Bus Standard base charge').usdPerMillion).toBeCloseTo(1);
    const hubs = byName(costPerMillion(run, { ...options, eventHubsThroughputUnits: 2 }).fixedPerMonth, 'Event Hubs');
    expect(hubs).toMatchObject({ perMillion: 4, unit: 'TU-hour' });
    expect(hubs.usdPerMillion).toBeCloseTo(1);
  });

  test('totals add the lines; the sparse view is absent when the run sent no payment alone', () => {
    expect(estimate.totals.variableBusy).toBeCloseTo(busy.reduce((a, l) => a + l.usdPerMillion, 0));
    const noSparse = costPerMillion({ ...run, sparse: { payments: 0, consumerActiveMsPerPayment: 0, durableActiveMsPerPayment: 0 } }, options);
    expect(noSparse.variable.sparse).toBeUndefined();
    expect(noSparse.totals.variableSparse).toBeUndefined();
  });

  test('terms: the lines summed by what they pay for, and the largest named; a quarter of the memory, a quarter of the compute, the same storage', () => {
    const { terms, largest } = termsOf(busy);
    const sum = (pick: (l: CostLine) => boolean) => busy.filter(pick).reduce((a, l) => a + l.usdPerMillion, 0);
    expect(terms.compute).toBeCloseTo(byName(busy, 'on-demand GB-s').usdPerMillion + byName(busy, 'always-ready execution GB-s').usdPerMillion);
    expect(terms.storage).toBeCloseTo(sum((l) => l.name.startsWith('storage:')));
    expect(terms.serviceBus).toBeCloseTo(byName(busy, 'Service Bus').usdPerMillion);
    expect(terms.compute + terms.storage + terms.serviceBus + terms.executions + terms.applicationInsights).toBeCloseTo(estimate.totals.variableBusy);
    expect(largest).toBe('compute');
    const small = termsOf(costPerMillion(run, { ...options, memoryGb: 0.5 }).variable.busy);
    expect(small.terms.compute).toBeCloseTo(terms.compute / 4);
    expect(small.terms.storage).toBeCloseTo(terms.storage);
    expect(() => termsOf([{ name: 'x', perPayment: 1, perMillion: 1e6, unit: 'hour', unitPrice: 1, usdPerMillion: 1e6 }])).toThrow(/belongs to no term/);
  });

  test('a run without payments or with an unknown billing class is refused', () => {
    expect(() => costPerMillion({ ...run, payments: 0 }, options)).toThrow(/no payments/);
    const bad = { ...run, storage: { ...run.storage, workload: { requests: { 'x.table.t.insert': 1 }, billing: { 'x.table.t.insert': 'gold' } } } };
    expect(() => costPerMillion(bad, options)).toThrow(/billing class 'gold'/);
  });
});

describe('payment shards (infra shardCount) and Service Bus Premium (infra serviceBusSku)', () => {
  const estimate = costPerMillion(run, options);

  test('N shards: N always-ready baselines and N task hubs polled when idle; Service Bus, Event Hubs and every variable line unchanged', () => {
    const three = costPerMillion(run, { ...options, shards: 3 });
    expect(byName(three.fixedPerMonth, 'idle polling').perMillion).toBeCloseTo(3 * 720);
    expect(byName(three.fixedPerMonth, 'baseline')).toMatchObject({ perMillion: 3 * 14_400, unit: 'GB-s' });
    expect(byName(three.fixedPerMonth, 'Service Bus').usdPerMillion).toBeCloseTo(byName(estimate.fixedPerMonth, 'Service Bus').usdPerMillion);
    expect(byName(three.fixedPerMonth, 'Event Hubs').usdPerMillion).toBeCloseTo(byName(estimate.fixedPerMonth, 'Event Hubs').usdPerMillion);
    expect(three.variable).toEqual(estimate.variable);
    expect(three.totals.fixedPerMonth - estimate.totals.fixedPerMonth).toBeCloseTo(2 * (720 * 1e-4 + 14_400 * 1e-4));
    expect(costPerMillion(run, { ...options, shards: 1 })).toEqual(estimate);
    for (const shards of [0, 1.5, -1]) expect(() => costPerMillion(run, { ...options, shards })).toThrow(/shards must be an integer >= 1/);
  });

  test('Premium: messaging units x hours in place of the Standard base charge; operations counted, not billed', () => {
    const premium = costPerMillion(run, { ...options, serviceBusPremiumUnits: 2 });
    // 2 units x 2 hours x $5.
    expect(byName(premium.fixedPerMonth, 'Service Bus Premium')).toMatchObject({ perMillion: 4, unit: 'MU-hour', unitPrice: 5, usdPerMillion: 20 });
    expect(premium.fixedPerMonth.filter((l) => l.name.includes('Standard base charge'))).toEqual([]);
    const operations = byName(premium.variable.busy, 'Service Bus operations');
    expect(operations).toMatchObject({ perPayment: 3.5, usdPerMillion: 0 });
    expect(premium.totals.variableBusy).toBeCloseTo(estimate.totals.variableBusy - byName(estimate.variable.busy, 'Service Bus operations').usdPerMillion);
  });

  test("one shard's ceiling: 20,000 storage requests a second / the run's requests a payment; the shards a rate needs; Standard's 1,000 credits a second", () => {
    // 120 requests for 10 payments; 10 sends + 12 receives + 10 completes for 10 payments (abandons and renewals aside).
    expect(storageRequestsPerPayment(run)).toBe(12);
    expect(paymentsPerSecondPerShard(run)).toBeCloseTo(20_000 / 12);
    expect([1, 1666, 1667, 2000, 5000].map((rate) => shardsFor(rate, run))).toEqual([1, 1, 2, 2, 3]);
    expect(creditsPerPayment(run)).toBeCloseTo(3.2);
    expect(standardPaymentsPerSecond(run)).toBeCloseTo(312.5);
  });

  test('a shard count at a rate: the fixed month on each tier, the tier the rate needs, a million payments busy plus the fixed share of their seconds', () => {
    const fast = shardCost(run, options, 2, 2000, 1);
    const standardFixed = costPerMillion(run, { ...options, shards: 2 }).totals.fixedPerMonth;
    const premiumFixed = costPerMillion(run, { ...options, shards: 2, serviceBusPremiumUnits: 1 }).totals.fixedPerMonth;
    expect(fast).toMatchObject({ shards: 2, serviceBus: 'Premium', fixedStandard: standardFixed, fixedPremium: premiumFixed, fixedPerMonth: premiumFixed });
    expect(fast.variablePerMillion).toBeCloseTo(costPerMillion(run, { ...options, serviceBusPremiumUnits: 1 }).totals.variableBusy);
    // A million at 2,000 a second take 500 s of the 7,200 s month.
    expect(fast.fixedSharePerMillion).toBeCloseTo((premiumFixed * 500) / 7_200);
    const slow = shardCost(run, options, 1, 300, 1);
    expect(slow).toMatchObject({ serviceBus: 'Standard', fixedPerMonth: estimate.totals.fixedPerMonth, variablePerMillion: estimate.totals.variableBusy });
  });
});

describe('pricesWith: list prices overridable by name', () => {
  test('defaults unless overridden; an override replaces one price', () => {
    expect(pricesWith([])).toEqual(DEFAULT_PRICES);
    const p = pricesWith(['appInsightsGb=2.76', 'queueClass1=0.000004']);
    expect(p.appInsightsGb).toBe(2.76);
    expect(p.queueClass1).toBe(0.000004);
    expect(p.tableTransaction).toBe(DEFAULT_PRICES.tableTransaction);
  });

  test('an unknown name, a missing or negative value is refused with the override named', () => {
    expect(() => pricesWith(['gold=1'])).toThrow(/--prices gold=1: expected name=value/);
    expect(() => pricesWith(['appInsightsGb='])).toThrow(/must be a number >= 0/);
    expect(() => pricesWith(['appInsightsGb=-1'])).toThrow(/must be a number >= 0/);
    expect(() => pricesWith(['appInsightsGb=x'])).toThrow(/must be a number >= 0/);
  });
});

describe('Durable queue operations a payment: priced as counted or at a target (issue 37: 18 today, 12 after)', () => {
  test('counted: puts and deletes of every Durable queue a payment; the target scales puts, deletes and gets alike', () => {
    expect(durableQueueOpsPerPayment(run)).toBe(4); // (30 + 10 puts) / 10
    const at2 = costPerMillion(run, { ...options, durableQueueOpsPerPayment: 2 });
    expect(at2.durableQueueOpsPerPayment).toBe(2);
    expect(byName(at2.variable.busy, 'durable queue put').perPayment).toBeCloseTo(2);
    expect(byName(at2.variable.busy, 'durable queue emptyGet').perPayment).toBeCloseTo(5); // polling is not per message
    expect(byName(at2.variable.busy, 'claim tables').perPayment).toBe(2);
    expect(at2.totals.variableBusy).toBeCloseTo(costPerMillion(run, options).totals.variableBusy - 2e6 * 1e-5);
  });

  test('a target for a run that counted no queue message is refused', () => {
    const none = {
      ...run,
      storage: { ...run.storage, workload: { requests: { 'app.table.idempotency.batch': 20 }, billing: { 'app.table.idempotency.batch': 'transaction' } } },
    };
    expect(() => costPerMillion(none, { ...options, durableQueueOpsPerPayment: 12 })).toThrow(/no Durable queue puts or deletes/);
  });
});

describe("the Durable host's telemetry: host.json levels applied as the Functions host applies them", () => {
  const runLevels = { default: 'Information', 'DurableTask.Core': 'Warning' };
  const counts: HostLogCount[] = [
    { category: 'Azure.Core', level: 'Information', records: 100, bytes: 100_000 },
    { category: 'Function.chargePayment.User', level: 'Information', records: 20, bytes: 16_000 },
    { category: 'Function.chargePayment', level: 'Information', records: 20, bytes: 8_000 },
    { category: 'Host.Results', level: 'Information', records: 10, bytes: 4_000 },
    { category: 'Host.Results', level: 'Error', records: 1, bytes: 500 },
  ];

  test('a category takes the level of its longest matching prefix, default otherwise, case-insensitive', () => {
    const levels = { default: 'Warning', Function: 'Information', 'function.chargePayment.User': 'Error' };
    expect(levelFor('Function.chargePayment', levels)).toBe('Information');
    expect(levelFor('Function.chargePayment.User', levels)).toBe('Error');
    expect(levelFor('Azure.Core', levels)).toBe('Warning');
    expect(recordsAt(counts, { default: 'Warning' }).map((c) => c.level)).toEqual(['Error']);
    expect(() => recordsAt(counts, { default: 'Loud' })).toThrow(/unknown log level 'Loud'/);
  });

  test('counts between two snapshots: per category and level, rows that did not grow left out', () => {
    const before: HostLogCount[] = [{ category: 'Azure.Core', level: 'Information', records: 40, bytes: 30_000 }, ...counts.slice(1)];
    expect(diffHostCounts(counts, before)).toEqual([{ category: 'Azure.Core', level: 'Information', records: 60, bytes: 70_000 }]);
    expect(totalOf(counts)).toEqual({ records: 151, bytes: 128_500 });
  });

  test('priced at the run levels or stricter ones; the trigger gets the per-execution records measured on the Durable executions', () => {
    // 10 Durable executions, 5 trigger executions: Function.chargePayment + Host.Results = 31 records, 12,500 B for 10.
    const asRun = hostRecordsPriced(counts, runLevels, undefined, 10, 5);
    expect(asRun.durable).toEqual({ records: 151, bytes: 128_500 });
    expect(asRun.trigger.records).toBeCloseTo(15.5);
    expect(asRun.trigger.bytes).toBeCloseTo(6_250);
    const quiet = hostRecordsPriced(counts, runLevels, { default: 'Warning' }, 10, 5);
    expect(quiet.durable).toEqual({ records: 1, bytes: 500 });
    expect(quiet.trigger.bytes).toBeCloseTo(250);
    expect(() => hostRecordsPriced(counts, { default: 'Warning' }, { default: 'Warning', 'Azure.Core': 'Information' }, 10, 5)).toThrow(
      /'Azure.Core' is below the run's/,
    );
  });

  test('on the cost page: the host records and the trigger records, each at ingestion per GB, with the per-item overhead', () => {
    const measured = { ...run, hostTelemetry: { levels: runLevels, records: counts } };
    const e = costPerMillion(measured, { ...options, telemetryItemOverheadBytes: 100 });
    // (128,500 + 151 x 100) / 10 payments = 14,360 B; trigger: 10 executions / 70 Durable x (12,500 + 31 x 100) / 10.
    expect(byName(e.variable.busy, "the Durable host's records").perPayment).toBeCloseTo(14_360 / 1e9);
    expect(byName(e.variable.busy, "the trigger's host records").perPayment).toBeCloseTo(((10 / 70) * 15_600) / 10 / 1e9);
    expect(e.unmeasured).toEqual([]);
    const quiet = costPerMillion(measured, { ...options, hostLogLevels: { default: 'Warning' } });
    expect(byName(quiet.variable.busy, "the Durable host's records").perPayment).toBeCloseTo(50 / 1e9);
    expect(termsOf(e.variable.busy).terms.applicationInsights).toBeGreaterThan(termsOf(quiet.variable.busy).terms.applicationInsights);
  });
});

describe('the Cosmos store: its RUs, TTL deletions included', () => {
  test('create + replace and the TTL deletion, at the RU price, in the storage term', () => {
    const lines = cosmosStoreLines(prices);
    expect(byName(lines, 'TTL deletion')).toMatchObject({ perPayment: COSMOS_RU_PER_PAYMENT.ttlDelete, unit: 'RU' });
    expect(byName(lines, 'TTL deletion').usdPerMillion).toBeCloseTo(COSMOS_RU_PER_PAYMENT.ttlDelete * 1e6 * 1e-3);
    expect(byName(cosmosStoreLines(prices, { create: 1, replace: 2, ttlDelete: 3 }), 'create').perPayment).toBe(3);
    expect(termsOf(lines).terms.storage).toBeCloseTo(lines.reduce((a, l) => a + l.usdPerMillion, 0));
  });
});

describe('a month: variable lines scaled to the month, free grants applied where they belong, fixed lines added', () => {
  const estimate = costPerMillion(run, options);
  test('Flex on demand (GB-s, executions) and Service Bus operations are granted; always-ready lines are not', () => {
    const bill = monthBill(estimate, estimate.variable.busy, 100_000);
    const get = (part: string) => bill.lines.find((l) => l.name.includes(part))!;
    // trigger: 1 GB-s a payment x 100,000 = 100,000 GB-s, all within the grant.
    expect(get('on-demand GB-s')).toMatchObject({ granted: MONTHLY_GRANTS.flexOnDemandGbSeconds, usd: 0 });
    expect(get('Flex executions on demand').usd).toBe(0);
    expect(get('always-ready execution GB-s').granted).toBe(0);
    expect(get('always-ready execution GB-s').usd).toBeCloseTo(4 * 100_000 * 1e-3);
    expect(get('Service Bus operations').usd).toBe(0); // 350,000 operations < 13 M
    expect(get('baseline').usd).toBeCloseTo(14_400 * 1e-4);
    expect(bill.total).toBeCloseTo(bill.lines.reduce((a, l) => a + l.usd, 0));
  });

  test('past the grants the excess is billed; Log Analytics grants 5 GB across the telemetry lines', () => {
    const big = monthBill(estimate, estimate.variable.busy, 10_000_000);
    const gbs = big.lines.find((l) => l.name.includes('on-demand GB-s'))!;
    expect(gbs.usd).toBeCloseTo((10_000_000 - 100_000) * 1e-2);
    const telemetry = big.lines.find((l) => l.unit === 'GB')!; // 1,000 B x 10 M = 10 GB, 5 free
    expect(telemetry.usd).toBeCloseTo(5 * 2);
    expect(() => monthBill(estimate, estimate.variable.busy, -1)).toThrow(RangeError);
  });
});

describe('price sources', () => {
  test('every source names a URL and a date, and says whether it was read here', () => {
    for (const source of PRICE_SOURCES) {
      expect(source.url).toMatch(/^https:\/\//);
      expect(source.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(['read', 'copy', 'recorded']).toContain(source.status);
      if (source.status === 'copy') expect(source.evidence).toMatch(/\d{4}-\d{2}-\d{2}/);
    }
    // Every price the model multiplies by names where it comes from.
    const covered = new Set(PRICE_SOURCES.flatMap((s) => s.prices));
    expect(Object.keys(DEFAULT_PRICES).filter((name) => !covered.has(name as keyof Prices))).toEqual([]);
    expect(PRICE_SOURCES.map((s) => s.covers).join(' ')).toMatch(/Event Hubs.*Cosmos|Cosmos.*Event Hubs/s);
  });
});

describe('queueOpsForGoal: the Durable queue operations a payment at which the busy total meets a goal', () => {
  test('the busy total at the returned count equals the goal; none when even 0 operations miss it', () => {
    const base = costPerMillion(run, { ...options, durableQueueOpsPerPayment: 0 }).totals.variableBusy;
    const goal = base + 25;
    const ops = queueOpsForGoal(run, options, goal)!;
    expect(costPerMillion(run, { ...options, durableQueueOpsPerPayment: ops }).totals.variableBusy).toBeCloseTo(goal);
    expect(queueOpsForGoal(run, options, base - 1)).toBeUndefined();
  });
});
