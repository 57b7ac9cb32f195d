/**
 * The simulator's `failed-stays-failed` judge of charges: a charge whose call reached the provider after its payment's
 * failure was alerted is a violation; a producer's reuse of the id for another payment, charged before its own hold,
 * is not (simulator world 2, seed 5014 of the 20,000-schedule run: PayPal-like, the id reused 25 h after the first
 * payment was held).
 */
import { chargedAfterAlert } from '../../tools/simulate/chargedAfterAlert';
import { identityOf } from '../../tools/simulate/identity';
import type { LedgerCharge } from '../../tools/simulate/providerTypes';

const charge = (chargeId: string, customerId: string, calledAtMs: number): LedgerCharge => ({
  key: 'p1',
  paymentId: 'p1',
  customerId,
  chargeId,
  atMs: calledAtMs + 5,
  calledAtMs,
  amount: 4700,
  currency: 'EUR',
});
const first = identityOf({ customerId: 'c1', amount: 4700, currency: 'EUR' });
const second = identityOf({ customerId: 'c1-reused', amount: 4700, currency: 'EUR' });
const ids = (found: ReturnType<typeof chargedAfterAlert>) => found.map((f) => `${f.charge.chargeId}@${f.alertMs}`);

describe('a charge after its payment was alerted failed or held', () => {
  test("the first payment's call after its alert: a violation, judged from the first alert", () => {
    const found = chargedAfterAlert('p1', [100, 300], [charge('ch_1', 'c1', 50), charge('ch_2', 'c1', 150)], new Set([first]), first);
    expect(ids(found)).toEqual(['ch_2@100']);
  });

  test('a call made before the alert and landing after it: not a violation (the hold is about it)', () => {
    expect(chargedAfterAlert('p1', [100], [charge('ch_1', 'c1', 90)], new Set([first]), first)).toEqual([]);
  });

  test("the id reused for another payment, charged before its own hold: not the first payment's charge", () => {
    const ledger = [charge('ch_1', 'c1', 50), charge('ch_4', 'c1-reused', 1_000)];
    expect(chargedAfterAlert('p1', [100, 1_050], ledger, new Set([first, second]), first)).toEqual([]);
  });

  test('the reused payment charged again after its own hold: a violation, judged from that hold', () => {
    const ledger = [charge('ch_4', 'c1-reused', 1_000), charge('ch_5', 'c1-reused', 1_100)];
    expect(ids(chargedAfterAlert('p1', [100, 1_050], ledger, new Set([first, second]), first))).toEqual(['ch_5@1050']);
  });

  test('a reused payment with no alert of its own: nothing to judge it by', () => {
    expect(chargedAfterAlert('p1', [100], [charge('ch_4', 'c1-reused', 1_000)], new Set([first, second]), first)).toEqual([]);
  });

  test('only the payments that ended failed are judged, and only charges of this id', () => {
    const ledger = [charge('ch_4', 'c1-reused', 200), { ...charge('ch_9', 'c1', 200), paymentId: 'p2' }];
    expect(chargedAfterAlert('p1', [100], ledger, new Set([first]), first)).toEqual([]);
    expect(ids(chargedAfterAlert('p1', [100], [charge('ch_2', 'c1', 200)], new Set(), undefined))).toEqual(['ch_2@100']);
  });
});
