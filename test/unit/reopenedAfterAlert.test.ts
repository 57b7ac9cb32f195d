/**
 * The simulator's `failed-stays-failed` judge of the reconciler: a reopen of an attempt already alerted failed or held
 * is a violation; the restarted run's own alert, logged before the reconciler's line, is not (simulator world 2, seeds
 * 15, 61, 529: the line comes after the restart it reports).
 */
import { reopenedAfterAlert } from '../../tools/simulate/reopenedAfterAlert';

const line = (atMs: number, attributes: Record<string, unknown>) => ({
  atMs,
  name: 'log',
  body: String(attributes.outcome),
  attributes: { idempotencyKey: 'p1', ...attributes },
});
const reconciled = (atMs: number, previousAttempt: number) => line(atMs, { outcome: 'reconciled', previousAttempt, attempt: previousAttempt + 1 });

describe('a reopen by the reconciler after a failure was alerted', () => {
  test('the reopened attempt was alerted failed before: a violation', () => {
    const logs = [line(10, { outcome: 'failed', attempt: 1 }), reconciled(20, 1)];
    expect(reopenedAfterAlert(logs, 'p1')).toEqual([logs[1]]);
  });

  test('an alert of the attempt held, at the same instant as the reopen: a violation', () => {
    const logs = [line(20, { outcome: 'held', attempt: 1 }), reconciled(20, 1)];
    expect(reopenedAfterAlert(logs, 'p1')).toHaveLength(1);
  });

  test("an alert of an attempt older than the one reopened: a violation (the alert's payment was reopened before)", () => {
    const logs = [line(10, { outcome: 'failed', attempt: 1 }), reconciled(30, 2)];
    expect(reopenedAfterAlert(logs, 'p1')).toHaveLength(1);
  });

  test('an alert without an attempt is judged by time', () => {
    expect(reopenedAfterAlert([line(10, { outcome: 'held' }), reconciled(20, 1)], 'p1')).toHaveLength(1);
    expect(reopenedAfterAlert([reconciled(20, 1), line(30, { outcome: 'held' })], 'p1')).toHaveLength(0);
  });

  test("the restarted run's own alert, logged before the reconciler's line: not a reopen of what was alerted", () => {
    const logs = [line(20, { outcome: 'failed', attempt: 2 }), line(20, { outcome: 'held', attempt: 2 }), reconciled(21, 1)];
    expect(reopenedAfterAlert(logs, 'p1')).toEqual([]);
  });

  test("an alert after the reopen, or of another key, or a line that is not the reconciler's: none", () => {
    const other = { ...line(10, { outcome: 'failed', attempt: 1 }), attributes: { idempotencyKey: 'p2', outcome: 'failed', attempt: 1 } };
    expect(reopenedAfterAlert([reconciled(20, 1), line(30, { outcome: 'failed', attempt: 1 })], 'p1')).toEqual([]);
    expect(reopenedAfterAlert([other, reconciled(20, 1)], 'p1')).toEqual([]);
    expect(reopenedAfterAlert([line(10, { outcome: 'failed', attempt: 1 }), line(20, { outcome: 'reconcileRefused', previousAttempt: 1 })], 'p1')).toEqual([]);
  });

  test('an alert before the producer reused the id for another payment: about the earlier payment, not the reopened record (seed 13436)', () => {
    const logs = [line(10, { outcome: 'held', attempt: 1 }), reconciled(50, 2)];
    expect(reopenedAfterAlert(logs, 'p1', [30])).toEqual([]);
    // The new payment's own alert, after the reuse and before the reopen: a violation still.
    const again = [...logs.slice(0, 1), line(40, { outcome: 'failed', attempt: 2 }), reconciled(50, 2)];
    expect(reopenedAfterAlert(again, 'p1', [30])).toEqual([again[2]]);
    // A reuse after the reopen changes nothing.
    expect(reopenedAfterAlert(logs, 'p1', [60])).toEqual([logs[1]]);
  });
});
