import { payloadDigest } from 'azure-functions-idempotency';
import type { PaymentRequested } from '../../src/payments/schema';
import type { LedgerCharge } from './providerTypes';

/**
 * Which payment a charge or a record is about. A payment id names one payment by contract, but a producer may reuse
 * it for another (producer.ts): the invariants then judge each payment by its body (customer, amount, currency), so
 * that the first payment's charge is never counted as the second's, and two payments under one id are not "one
 * payment charged twice".
 */
export const identityOf = (p: Pick<PaymentRequested, 'customerId' | 'amount' | 'currency'>): string => `${p.customerId}|${p.amount}|${p.currency}`;

/** The body a record is about (the one whose digest it holds), among those the producer sent under its id. */
export function paymentOfRecord(
  sent: ReadonlyMap<string, readonly PaymentRequested[]>,
  record: { readonly key: string; readonly digest: string },
): PaymentRequested | undefined {
  return sent.get(record.key)?.find((body) => payloadDigest(body) === record.digest);
}

/** The provider's charges for this payment under its key (every charge of the id when the body is unknown). */
export function chargesOf(ledger: readonly LedgerCharge[], key: string, payment: PaymentRequested | undefined): LedgerCharge[] {
  return ledger.filter((c) => c.paymentId === key && (payment === undefined || identityOf(c) === identityOf(payment)));
}
