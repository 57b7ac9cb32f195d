import { aliasOf } from '../../tools/bench/counterAliases';
import { SlowRequests } from '../../tools/bench/slowRequests';
import { groupOf, sideBySide, splitLines, summarize, triggerPerCore, type DesignCounts } from '../../tools/bench/designSummary';

const run = (over: Partial<DesignCounts> & { design: string }): DesignCounts => ({
  payments: 10,
  consumer: { executionMsP50: 100, executionMsP99: 200, executions: 10 },
  durable: { executions: 70 },
  statusPollsPerPayment: 0,
  paymentsPerSecond: 5,
  acksPerSecond: 5,
  sparse: { consumerExecutionMs: [40, 50, 60] },
  storage: {
    workload: {
      requests: { 'app.table.idempotency.batch': 20, 'durable.queue.control.put': 30, 'durable.queue.workitems.put': 10, 'durable.table.History.batch': 40 },
    },
    idle: { seconds: 10, requests: { 'durable.queue.control.emptyGet': 100 } },
  },
  serviceBus: { sends: 10, receives: 12, completes: 10, abandons: 2, renewals: 0 },
  telemetry: { logRecords: 10, logBytes: 3_000 },
  ...over,
});

describe('bench:durable summary: figures per payment and the ratios handoff/hold', () => {
  test('storage kinds group as claim tables, Durable queue operations (all queues), Durable tables, Durable blobs', () => {
    expect(groupOf('app.table.idempotency.batch')).toBe('claim tables (table)');
    expect(groupOf('durable.queue.control.emptyGet')).toBe('durable queue emptyGet');
    expect(groupOf('durable.queue.workitems.emptyGet')).toBe('durable queue emptyGet');
    expect(groupOf('durable.table.Instances.merge')).toBe('durable table Instances');
    expect(groupOf('durable.blob.leases.lease.renew')).toBe('durable blob leases lease.renew');
  });

  test('per payment: storage by group, Service Bus receive + complete + abandon + renew, idle per second', () => {
    const figures = summarize(run({ design: 'hold' }));
    expect(figures['storage transactions / payment']).toBe(10);
    expect(figures['  durable queue put / payment']).toBe(4);
    expect(figures['  claim tables (table) / payment']).toBe(2);
    expect(figures['Service Bus ops / payment (receive+complete+abandon+renew)']).toBe(2.4);
    expect(figures['executions / payment']).toBe(8);
    expect(figures['idle storage transactions / s']).toBe(10);
    expect(figures['consumer execution, payment alone, p50 ms']).toBe(50);
  });

  test('side by side: handoff/hold ratio per figure; a design not run shows -', () => {
    const hold = run({ design: 'hold', consumer: { executionMsP50: 4_000, executionMsP99: 7_000, executions: 10 }, statusPollsPerPayment: 8 });
    const handoff = run({ design: 'handoff', consumer: { executionMsP50: 100, executionMsP99: 700, executions: 10 } });
    const rows = new Map(sideBySide(hold, handoff).map(([name, ...cells]) => [name, cells]));
    expect(rows.get('consumer execution p50 ms')).toEqual(['4000', '100', '0.03']);
    expect(rows.get('status polls / payment')).toEqual(['8', '0', '0']);
    expect(new Map(sideBySide(hold, undefined).map(([name, ...cells]) => [name, cells])).get('consumer execution p50 ms')).toEqual(['4000', '-', '-']);
  });

  test('split phase: the trigger alone, paced and in a burst, its storage per message, and its ratios to the hold', () => {
    const split = {
      payments: 200,
      paced: { ratePerSecond: 16, executionMsP50: 30, executionMsP99: 150, eventLoopDelayMaxMs: 12 },
      burst: { executionMsP50: 120, executionMsP99: 400, acksPerSecond: 80, cpuMsPerMessage: { benchProcess: 6, durableHost: 5, machine: 20 } },
      triggerStoragePerMessage: {
        'app.table.idempotency.batch': 1,
        'durable.queue.control.put': 1,
        'durable.table.Instances.insert': 1.02,
        'durable.table.Instances.query': 1,
      },
      drain: { paymentsPerSecond: 4 },
      charged: 200,
    };
    const hold = run({ design: 'hold', paymentsPerSecond: 4 });
    const handoff = run({ design: 'handoff', split });
    const figures = summarize(handoff);
    expect(figures['split: trigger alone, paced at 16/s, p99 ms']).toBe(150);
    expect(figures['split: messages acknowledged / s (trigger alone, burst)']).toBe(80);
    expect(figures['split: trigger storage requests / message (claim + start)']).toBeCloseTo(4.02, 5);
    expect(summarize(hold)['split: trigger alone, burst, p99 ms']).toBeUndefined();
    expect(figures['split: CPU ms / message, Durable host (start API)']).toBe(5);
    const lines = splitLines(hold, handoff, 16, 1_000);
    expect(lines.find((l) => l.includes("holding design's ceiling"))).toMatch(/: 5x$/);
    expect(lines.find((l) => l.includes('measured in this run'))).toMatch(/\(4 payments\/s\): 20x$/);
    // The hold's own ceiling: 16 held messages / its 1.6 s per payment alone (p50) = 10/s.
    const held = splitLines(run({ design: 'hold', paymentsPerSecond: 4, sparse: { consumerExecutionMs: [1_500, 1_600, 2_000] } }), handoff, 16, 1_000);
    expect(held.find((l) => l.includes('its own time per payment'))).toMatch(/\(10\/s = 16 calls \/ 1\.6 s, .*\): 8x measured$/);
    expect(lines.find((l) => l.includes('its own time per payment'))).toMatch(/\(320\/s = 16 calls \/ 0\.05 s.*: 0\.25x measured$/);
    expect(lines.find((l) => l.includes('drained'))).toContain('charged 200 of 200');
    expect(lines[0]).toContain('longest event-loop delay 12 ms');
    expect(splitLines(hold, run({ design: 'handoff' }), 16, 1_000)).toEqual([]);
  });

  test('split with the counting proxies apart: CPU by process, one core for the trigger and the start API, peak memory', () => {
    const cpuMsPerMessage = { benchProcess: 4, durableHost: 1, counters: 3, appAzurite: 2, engineAzurite: 4, machine: 16 };
    const split = {
      payments: 100,
      paced: { ratePerSecond: 16, executionMsP50: 30, executionMsP99: 150 },
      burst: { executionMsP50: 120, executionMsP99: 400, acksPerSecond: 80, cpuMsPerMessage },
      triggerStoragePerMessage: { 'app.table.idempotency.batch': 1 },
      drain: { paymentsPerSecond: 4 },
      memoryPeakMb: { durableHost: 300, benchProcess: 150 },
      charged: 100,
    };
    const figures = summarize(run({ design: 'handoff', split }));
    expect(figures['split: CPU ms / message, bench process (trigger + bus)']).toBe(4);
    expect(figures['split: CPU ms / message, bench process (trigger + bus + counting proxies)']).toBeUndefined();
    expect(figures['split: CPU ms / message, Azurite (app + task hub)']).toBe(6);
    expect(figures['split: messages / s one core serves (1000 / (trigger + start API) CPU ms)']).toBe(200);
    expect(figures['split: peak memory MB, Durable worker host (dotnet + Node worker)']).toBe(300);
    const lines = splitLines(undefined, run({ design: 'handoff', split }), 16, 1_000);
    expect(lines.find((l) => l.includes('CPU ms per burst message'))).toMatch(
      /counting proxies 3, Azurite 6, .*: 200 messages\/s \(derived from CPU\), 12\.5x the hold's ceiling$/,
    );
    expect(lines.find((l) => l.includes('peak memory'))).toContain('Durable worker host 300 MB');
    const held = run({ design: 'hold', sparse: { consumerExecutionMs: [2_000] } }); // 16 / 2 s = 8/s
    expect(splitLines(held, run({ design: 'handoff', split }), 16, 1_000).find((l) => l.includes('its own time per payment'))).toMatch(
      /: 10x measured, 25x for one core \(derived from CPU\)$/,
    );
    // Without the proxies apart the bench process's figure includes them: no per-core figure is derived.
    expect(triggerPerCore({ benchProcess: 8, durableHost: 3 })).toBeUndefined();
  });
});

describe('bench counters: resource aliases, as data for the counters process', () => {
  test('a table prefix is stripped; so are a task hub name and its partition suffix', () => {
    expect(aliasOf({ prefix: 'bench' })('table', 'benchIdempotency')).toBe('Idempotency');
    expect(aliasOf({ prefix: 'bench' })('table', 'Other')).toBe('Other');
    const hub = aliasOf({ hub: 'benchhandoffab12c' });
    expect(hub('queue', 'benchhandoffab12c-control-03')).toBe('control');
    expect(hub('queue', 'benchhandoffab12c-workitems')).toBe('workitems');
    expect(hub('table', 'BenchHandoffAb12cHistory')).toBe('History');
    expect(hub('blob', 'benchhandoffab12c-leases')).toBe('leases');
  });
});

describe('bench proxies: slow requests kept to tell which dependency stalled', () => {
  test('only answers at or over the threshold are kept, the last `limit`, and read from a time on', () => {
    const slow = new SlowRequests(200, 2);
    slow.record('app.table.idempotency.batch', 1_000, 1_199); // 199 ms: not slow
    slow.record('rpc.starts', 2_000, 2_200); // 200 ms
    slow.record('durable.queue.control.put', 3_000, 4_500);
    slow.record('durable.table.Instances.query', 5_000, 8_000); // pushes out the oldest (limit 2)
    expect(slow.since(0)).toEqual([
      { what: 'durable.queue.control.put', atMs: 3_000, ms: 1_500 },
      { what: 'durable.table.Instances.query', atMs: 5_000, ms: 3_000 },
    ]);
    expect(slow.since(4_000).map((r) => r.what)).toEqual(['durable.table.Instances.query']);
  });

  test('the split lines name the slowest answers while paced', () => {
    const split = {
      payments: 10,
      paced: {
        ratePerSecond: 16,
        executionMsP50: 30,
        executionMsP99: 3_000,
        slowRequests: {
          count: 2,
          slowest: [
            { what: 'rpc.starts', atS: 12.5, ms: 2_900 },
            { what: 'durable.table.Instances.insert', atS: 12.5, ms: 2_800 },
          ],
        },
      },
      burst: { executionMsP50: 120, executionMsP99: 400, acksPerSecond: 80 },
      triggerStoragePerMessage: {},
      drain: { paymentsPerSecond: 4 },
      charged: 10,
    };
    const line = splitLines(undefined, run({ design: 'handoff', split }), 16, 1_000).find((l) => l.includes('answers of 200 ms'));
    expect(line).toBe(
      "split: dependencies' answers of 200 ms or more while paced: 2; slowest rpc.starts 2900 ms at 12.5 s, durable.table.Instances.insert 2800 ms at 12.5 s",
    );
    // The processes' own pauses: the one that paused when the answers were slow is named.
    const paused = { ...split, paced: { ...split.paced, stalls: { benchProcess: [], engineAzurite: [{ atS: 12.4, ms: 2_850 }], counters: [] } } };
    expect(splitLines(undefined, run({ design: 'handoff', split: paused }), 16, 1_000).find((l) => l.includes('event-loop pauses'))).toBe(
      'split: event-loop pauses of 200 ms or more while paced: engineAzurite 2850 ms at 12.4 s (watched: benchProcess, engineAzurite, counters)',
    );
    const calm = { ...split, paced: { ...split.paced, stalls: { benchProcess: [], engineAzurite: [] } } };
    expect(splitLines(undefined, run({ design: 'handoff', split: calm }), 16, 1_000).find((l) => l.includes('event-loop pauses'))).toBe(
      'split: event-loop pauses of 200 ms or more while paced: none (watched: benchProcess, engineAzurite)',
    );
    expect(splitLines(undefined, run({ design: 'handoff', split }), 16, 1_000).some((l) => l.includes('event-loop pauses'))).toBe(false);
  });
});
