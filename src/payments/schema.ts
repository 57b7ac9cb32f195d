import { z } from 'zod';

/**
 * A PaymentRequested message. `paymentId` doubles as the `Idempotency-Key` header sent to the
 * provider, so it is restricted to header-safe characters. Unknown fields are dropped before the
 * digest is taken, so adding a field on the producer side does not look like a reused key.
 */
export const PaymentRequestedSchema = z.object({
  paymentId: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1-128 characters of A-Z a-z 0-9 . _ : -'),
  customerId: z.string().trim().min(1).max(128),
  amount: z.number().int('integer minor units').positive().max(Number.MAX_SAFE_INTEGER),
  currency: z.string().regex(/^[A-Z]{3}$/, 'an ISO 4217 code: three capital letters'),
});
export type PaymentRequested = z.infer<typeof PaymentRequestedSchema>;

/** What a payment ended as; stored as the dedup record's result and returned to duplicates. */
export type ChargeResult =
  | { readonly status: 'succeeded'; readonly chargeId: string; readonly amount: number; readonly currency: string }
  /** The provider declined (402): permanent, recorded, never retried. */
  | { readonly status: 'declined'; readonly reason: string }
  /**
   * The provider refused the request as such (422, other 4xx): permanent, recorded, alerted. `code`
   * `idempotency-key-reused`: the provider already saw this Idempotency-Key with another body (a
   * paymentId reused for another payment after our record expired): counted as a key reuse.
   */
  | { readonly status: 'rejected'; readonly reason: string; readonly code?: 'idempotency-key-reused' }
  /**
   * Handoff design: the provider's transient failures outlasted `PAYMENT_RETRY_BUDGET_MINUTES`. Not charged as far
   * as we know (the provider may have charged on a call whose answer was lost: an operator's retry with the same
   * `Idempotency-Key` gets that charge back, never a second one). Counted (`payments.failed`), alerted, retried by
   * an operator (`npm run payments:retry`).
   */
  | {
      readonly status: 'failed';
      readonly reason: string;
      /**
       * `held-for-operator`: not a transient failure: a call that may have charged could be checked neither by the
       * provider's key memory nor by a look-up (src/payments/providerLookup.ts). Counted `payments.held` too.
       */
      readonly code?: 'held-for-operator';
    };
