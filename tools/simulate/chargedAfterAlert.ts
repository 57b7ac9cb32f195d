import { identityOf } from './identity';
import type { LedgerCharge } from './providerTypes';

/**
 * The charges of a payment made after its failure was alerted (`failed-stays-failed`, before an operator's release).
 * Judged by when the call reached the provider: a call in flight when the run gave up is what its hold is about.
 *
 * A producer may reuse the id for another payment once the first's record expired (producer.ts): each payment under
 * the id is judged against the first failure alert logged once it existed (from its first call to the provider), so
 * a second payment charged before its own hold is not read as the first one charged after the first's hold.
 */
export function chargedAfterAlert(
  key: string,
  alertTimes: readonly number[],
  ledger: readonly LedgerCharge[],
  failedIdentities: ReadonlySet<string>,
  firstIdentity: string | undefined,
): { readonly charge: LedgerCharge; readonly alertMs: number }[] {
  const charged: { charge: LedgerCharge; alertMs: number }[] = [];
  const ofKey = ledger.filter((c) => c.paymentId === key && (failedIdentities.size === 0 || failedIdentities.has(identityOf(c))));
  const bornMs = new Map<string, number>();
  for (const charge of ofKey) bornMs.set(identityOf(charge), Math.min(bornMs.get(identityOf(charge)) ?? charge.calledAtMs, charge.calledAtMs));
  for (const charge of ofKey) {
    // The first payment under the id is judged from the first alert; a later one from the first alert once it existed.
    const first = firstIdentity === undefined || identityOf(charge) === firstIdentity;
    const born = bornMs.get(identityOf(charge)) ?? 0;
    const alertMs = alertTimes.find((atMs) => first || atMs >= born);
    if (alertMs !== undefined && charge.calledAtMs > alertMs) charged.push({ charge, alertMs });
  }
  return charged;
}
