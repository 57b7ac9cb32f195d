import { costPerMillion, termsOf, type CostLine, type CostOptions, type RunCounts } from '../../tools/cost/costModel';
import { DEFAULT_PRICES, pricesWith, type Prices } from '../../tools/cost/prices';

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
  appInsightsGb: 2,
};

const options: CostOptions = {
  prices,
  memoryGb: 2,
  alwaysReadyInstances: 1,
  azureMaxQueuePollingMs: 10_000,
  telemetryItemOverheadBytes: 0,
  hostTelemetryBytesPerExecution: 0,
  secondsPerMonth: 1_000,
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

  test('executions: the trigger and every Durable execution', () => {
    expect(byName(busy, 'Flex executions').perPayment).toBe(8);
    expect(byName(busy, 'Flex executions').usdPerMillion).toBeCloseTo(8e6 * 1e-7);
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
    expect(byName(busy, 'Application Insights').perPayment).toBeCloseTo(1_000 / 1e9);
    expect(byName(busy, 'Application Insights').usdPerMillion).toBeCloseTo((1_000 * 1e6 * 2) / 1e9);
    const more = costPerMillion(run, { ...options, telemetryItemOverheadBytes: 500, hostTelemetryBytesPerExecution: 100 });
    // (10,000 + 20 x 500 + 80 x 100) / 10 = 2,800 bytes a payment.
    expect(byName(more.variable.busy, 'Application Insights').perPayment).toBeCloseTo(2_800 / 1e9);
  });

  test('fixed per month: idle polling scaled from the run interval to Azure, and the always-ready baseline', () => {
    // 20 empty gets in 10 s = 2/s at 500 ms; at 10 s: 0.1/s; x 1,000 s = 100 a month.
    const idle = byName(estimate.fixedPerMonth, 'idle polling');
    expect(idle.perMillion).toBeCloseTo(100);
    expect(idle.usdPerMillion).toBeCloseTo(100 * 1e-4);
    const baseline = byName(estimate.fixedPerMonth, 'baseline');
    expect(baseline.perMillion).toBe(2_000); // 1 instance x 2 GB x 1,000 s
    expect(baseline.usdPerMillion).toBeCloseTo(2_000 * 1e-4);
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
