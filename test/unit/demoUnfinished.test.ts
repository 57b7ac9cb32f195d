import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';
import { buildReport } from '../../tools/demo/buildReport';
import type { FaultPlan } from '../../tools/demo/faults';
import type { Ledger } from '../../tools/demo/ledger';
import type { PartReport } from '../../tools/demo/part';
import { formatReport } from '../../tools/demo/report';
import { unfinishedRunOf } from '../../tools/demo/unfinishedRuns';
import { judge, verdictLine } from '../../tools/demo/verdict';
import type { LocalServiceBus } from '../../tools/local/LocalServiceBus';
import type { SendTag } from '../../tools/demo/ledger';

/** The payments part's report with `lost` and `unfinished` labels (as paymentsVerify makes them). */
const payments = (lost: string[], unfinished: string[]): PartReport => ({
  name: 'payments',
  messages: 10,
  unique: 10,
  duplicatesDetected: 0,
  parkedByReason: {},
  lostMessages: lost,
  unfinishedMessages: unfinished,
  doubleEffects: [],
  violations: [],
  details: { chargeable: 10, chargeableAwaitingOperator: 0, acknowledgedWithoutOutcome: 0 },
});

/** buildReport over an idle bus and a ledger where every message was sent once. */
function report(part: PartReport) {
  const ledger = { deliveries: 10, redeliveries: 0, fate: () => ({ copiesSent: 1 }) } as unknown as Ledger;
  const bus = { allQueues: () => [] } as unknown as LocalServiceBus<SendTag>;
  const faults = { total: 0, injected: { slowHandler: 0 } } as unknown as FaultPlan;
  return judge(buildReport({ seed: 1 }, [part], ledger, bus, faults, {}, 0, 0, 1_000, null, { mode: 'none', lookups: 0 }));
}

describe('demo: a payment whose run is still going at verification is unfinished, not lost', () => {
  const handedOff = (instanceId: string) => ({ outcome: 'handedOff', instanceId }) as unknown as PaymentDeliveryResult;

  test('the run of a handed-off acknowledgement is found among the unfinished runs, with its status; a final run is not', () => {
    const runs = new Map([['payment-a', 'Running']]);
    expect(unfinishedRunOf([handedOff('payment-a')], runs)).toEqual({ instanceId: 'payment-a', runtimeStatus: 'Running' });
    expect(unfinishedRunOf([handedOff('payment-b')], runs)).toBeUndefined();
    expect(unfinishedRunOf([{ outcome: 'processed' } as unknown as PaymentDeliveryResult], runs)).toBeUndefined();
  });

  test('unfinished only: the verdict names them with their runs status, 0 lost, and the run fails', () => {
    const r = report(payments([], ['#3 charge pay-3 (run payment-pay-3: Running)', '#4 charge pay-4 (run payment-pay-4: Pending)']));
    expect(r.lost).toBe(0);
    expect(r.unfinished).toBe(2);
    expect(r.ok).toBe(false);
    expect(verdictLine(r)).toMatch(/^10 messages: 0 lost, 2 unfinished at verification \(1 Running, 1 Pending\), 0 double charges: FAIL - /);
    expect(r.violations.some((v) => v.startsWith('2 payment(s) unfinished at verification (not lost'))).toBe(true);
    expect(r.violations.some((v) => /lost$/.test(v))).toBe(false);
    expect(formatReport(r)).toMatch(/unfinished at verification\s+2/);
  });

  test('lost only: the verdict says lost and no unfinished; both: each on its own count', () => {
    const lost = report(payments(['#5 charge pay-5'], []));
    expect(verdictLine(lost)).toMatch(/^10 messages: 1 lost, 0 double charges: FAIL - /);
    expect(lost.violations).toContain('1 message(s) lost');
    const both = report(payments(['#5 charge pay-5'], ['#3 charge pay-3 (run payment-pay-3: Running)']));
    expect(both.lost).toBe(1);
    expect(both.unfinished).toBe(1);
    expect(verdictLine(both)).toMatch(/^10 messages: 1 lost, 1 unfinished at verification \(1 Running\), 0 double charges: FAIL/);
  });

  test('neither: PASS, the line as before', () => {
    expect(verdictLine(report(payments([], [])))).toBe('10 messages: 0 lost, 0 double charges: PASS');
  });
});
