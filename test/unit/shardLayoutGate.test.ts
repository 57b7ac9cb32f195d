/**
 * The payments consumer's layout gate (src/app/shardLayoutGate.ts), without I/O: one check a process while it passes,
 * one shared by concurrent deliveries, a refusal read again only after the recheck interval, a check the store does
 * not answer thrown as it is and made again. On a real table: test/integration/shardLayoutRefusal.test.ts.
 */
import { StoreUnavailableError } from 'azure-functions-idempotency';
import { LAYOUT_RECHECK_MS, ShardLayoutRefusedError, shardLayoutGate } from '../../src/app/shardLayoutGate';
import type { OwnershipReport } from '../../src/payments/shardOwnership';
import { MetricNames } from '../../src/telemetry/Telemetry';
import { inMemoryTelemetry } from '../support/telemetry';

const clean: OwnershipReport = { checked: 3, requests: 16, strays: [] };
const stray: OwnershipReport = { checked: 3, requests: 16, strays: [{ paymentId: 'pay-9', owner: 2, status: 'COMPLETED' }] };

function gateWith(answers: Array<OwnershipReport | Error>) {
  let now = 1_000_000;
  const checks: number[] = [];
  const t = inMemoryTelemetry();
  const gate = shardLayoutGate({
    layout: { count: 3, index: 0 },
    clock: { nowMs: () => now },
    check: async (nowMs) => {
      checks.push(nowMs);
      await new Promise((resolve) => setImmediate(resolve));
      const answer = answers[Math.min(checks.length - 1, answers.length - 1)];
      if (answer instanceof Error) throw answer;
      return answer;
    },
  });
  return { pass: () => gate(t.telemetry), checks, t, advance: (ms: number) => void (now += ms) };
}

describe('the shard layout gate', () => {
  test('a clean check holds for the process: concurrent deliveries share it, later ones read nothing', async () => {
    const g = gateWith([clean]);
    await Promise.all([g.pass(), g.pass(), g.pass()]);
    g.advance(10 * LAYOUT_RECHECK_MS);
    await g.pass();
    expect(g.checks).toHaveLength(1);
  });

  test('a refusal names the key, its owner and this shard, is counted once per check, and is read again only after the recheck interval', async () => {
    const g = gateWith([stray, stray, clean]);
    await expect(g.pass()).rejects.toThrow('payment pay-9 (COMPLETED) is in the table of shard 0, but belongs to shard 2 of 3');
    await expect(g.pass()).rejects.toBeInstanceOf(ShardLayoutRefusedError);
    expect(g.checks).toHaveLength(1);
    g.advance(LAYOUT_RECHECK_MS);
    await expect(g.pass()).rejects.toBeInstanceOf(ShardLayoutRefusedError);
    expect(g.checks).toHaveLength(2);
    expect(await g.t.counter(MetricNames.shardLayoutRefused, { consumer: 'payments' })).toBe(2);
    g.advance(LAYOUT_RECHECK_MS);
    await g.pass();
    expect(g.t.logs().map((l) => l.attributes.outcome)).toEqual(['layout-refused', 'layout-refused', 'layout-accepted']);
  });

  test('a check the store does not answer is thrown as it is (the delivery rides it out) and made again by the next delivery', async () => {
    const g = gateWith([new StoreUnavailableError('table down', 'shardOwnership'), clean]);
    await expect(g.pass()).rejects.toBeInstanceOf(StoreUnavailableError);
    await g.pass();
    expect(g.checks).toHaveLength(2);
  });
});
