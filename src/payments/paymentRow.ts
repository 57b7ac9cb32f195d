import type { LocalEffect } from 'azure-functions-idempotency';
import type { ChargeResult, PaymentRequested } from './schema';

/** The local row name of the Payment row. */
export const PAYMENT_ROW = 'payment';

/**
 * The Payment row (`<marker RowKey>~payment`): written `pending` by the claim, updated with the outcome by the
 * completion (the chargeId of a charge, the reason of a decline, rejection or failure), in the marker's transaction.
 */
export function paymentRow(payment: PaymentRequested, state: string, result?: ChargeResult): LocalEffect {
  return {
    name: PAYMENT_ROW,
    properties: {
      paymentId: payment.paymentId,
      customerId: payment.customerId,
      amount: payment.amount,
      currency: payment.currency,
      state,
      chargeId: result?.status === 'succeeded' ? result.chargeId : null,
      ...(result && result.status !== 'succeeded' ? { reason: result.reason.slice(0, 500) } : {}),
    },
  };
}

/** The Payment row of a finished payment: its state is the result's status. */
export function finishedPaymentRow(payment: PaymentRequested, result: ChargeResult): LocalEffect {
  return paymentRow(payment, result.status, result);
}
