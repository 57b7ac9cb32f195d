import { hubCeilingLines, hubCeilingOf, hubLoadOf, shardsFor, STORAGE_LIMITS } from '../../tools/bench/hubCeiling';

describe("one task hub's ceiling from a run's counts (issue 52)", () => {
  const requests = {
    'app.table.Idempotency.insert': 64,
    'app.table.Idempotency.merge': 192,
    'durable.queue.workitems.put': 64,
    'durable.queue.workitems.get': 70,
    'durable.queue.control.put': 320,
    'durable.table.History.batch': 2_000,
    'durable.blob.leases.lease.renew': 332,
  };

  test('counts every request on the account, and only the puts of the work-item and control queues', () => {
    const load = hubLoadOf(requests, 64);
    expect(load.accountRequests).toBeCloseTo(3042 / 64, 6);
    expect(load.workItemMessages).toBe(1);
    expect(load.controlMessages).toBe(5);
  });

  test('the ceiling is the smallest of the three limits, named', () => {
    const ceiling = hubCeilingOf({ accountRequests: 46.45, workItemMessages: 1, controlMessages: 5 });
    expect(ceiling.byAccount).toBeCloseTo(20_000 / 46.45, 6);
    expect(ceiling.byWorkItemQueue).toBe(2_000);
    expect(ceiling.byControlQueues).toBe(1_600);
    expect(ceiling.ceiling).toBeCloseTo(430.57, 2);
    expect(ceiling.boundBy).toBe('account');
    expect(shardsFor(2_000, ceiling.ceiling)).toBe(5);
    // A control-heavy load on one partition is bound by its control queue instead.
    const control = hubCeilingOf({ accountRequests: 10, workItemMessages: 1, controlMessages: 5 }, 1);
    expect([control.boundBy, control.ceiling]).toEqual(['control queues', 400]);
  });

  test('the printed lines give the inputs, each limit with its source, and N', () => {
    const lines = hubCeilingLines('handoff', hubCeilingOf({ accountRequests: 46.45, workItemMessages: 1, controlMessages: 5 })).join('\n');
    expect(lines).toContain('46.45 requests');
    expect(lines).toContain('430.57 payments/s (account)');
    expect(lines).toContain('shards for 2000 payments/s: 5');
    expect(lines).toContain(STORAGE_LIMITS.queueMessagesPerSecond.source);
  });

  test('a ceiling that is not a positive number is refused', () => {
    expect(() => shardsFor(2_000, 0)).toThrow(RangeError);
  });
});
