import type { TableClient } from '@azure/data-tables';
import { StoreUnavailableError } from 'azure-functions-idempotency';
import { classifyStoreError } from 'azure-functions-idempotency/table';
import type { PaymentEvent } from './paymentEvents';

/** The Payment row as the provider's webhooks leave it: the newest event applied wins. */
export interface PaymentState {
  readonly paymentId: string;
  readonly state: 'succeeded' | 'refunded';
  readonly chargeId: string;
  readonly amount: number;
  readonly currency: string;
  readonly refundedAmount: number;
  /** The provider's version of the charge: only a higher one replaces the row. */
  readonly version: number;
  readonly lastEventId: string;
  readonly updatedAtMs: number;
}

/** What applying one event did: `applied`; `stale` (the row is at this version or a newer one: duplicate or out of order). */
export type ApplyOutcome = { readonly kind: 'applied'; readonly state: PaymentState } | { readonly kind: 'stale'; readonly rowVersion: number };

const ROW_KEY = 'payment';
const MAX_ROUNDS = 8;

/**
 * The Payment rows the webhook writes (table `PAYMENT_STATE_TABLE_NAME`, PartitionKey = paymentId):
 * one per payment, changed only by a conditional write, so deliveries in any order and any number
 * converge to the row of the highest version:
 * - absent: insert-if-absent (a concurrent insert wins: 409, read again);
 * - present at a version >= the event's: nothing is written (`stale`);
 * - present at a lower version: replace with `If-Match` of the read (a concurrent writer wins: 412, read again).
 *
 * Not the consumer's Payment row (a local row of its dedup record, changed only with its marker and
 * deleted with it at retention): the provider's view of a payment outlives the dedup window, so it has
 * its own table and is never swept.
 */
export class PaymentStateTable {
  constructor(
    private readonly client: TableClient,
    private readonly clock: { nowMs(): number },
  ) {}

  /** @throws StoreUnavailableError (retryable), StoreRequestError */
  async apply(event: PaymentEvent): Promise<ApplyOutcome> {
    const next = (version: number): PaymentState => ({
      paymentId: event.data.paymentId,
      state: event.type === 'charge.refunded' ? 'refunded' : 'succeeded',
      chargeId: event.data.chargeId,
      amount: event.data.amount,
      currency: event.data.currency,
      refundedAmount: event.data.refundedAmount ?? 0,
      version,
      lastEventId: event.id,
      updatedAtMs: this.clock.nowMs(),
    });
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const current = await this.read(event.data.paymentId);
      if (current && current.state.version >= event.data.version) return { kind: 'stale', rowVersion: current.state.version };
      const state = next(event.data.version);
      const entity = { partitionKey: state.paymentId, rowKey: ROW_KEY, ...state };
      try {
        if (!current) await this.client.createEntity(entity);
        else await this.client.updateEntity(entity, 'Replace', { etag: current.etag });
        return { kind: 'applied', state };
      } catch (error) {
        // 409 (someone inserted first) or 412 (someone replaced since our read): read again and decide again.
        classifyStoreError(error, current ? 'paymentState.replace' : 'paymentState.insert', 'write');
      }
    }
    throw new StoreUnavailableError('paymentState.apply', `payment ${event.data.paymentId}: still contended after ${MAX_ROUNDS} rounds`);
  }

  /** The row of `paymentId`, if any. @throws StoreUnavailableError, StoreRequestError */
  async get(paymentId: string): Promise<PaymentState | undefined> {
    return (await this.read(paymentId))?.state;
  }

  private async read(paymentId: string): Promise<{ state: PaymentState; etag: string } | undefined> {
    try {
      const e = await this.client.getEntity<Record<string, unknown>>(paymentId, ROW_KEY);
      const state: PaymentState = {
        paymentId: String(e.paymentId),
        state: e.state === 'refunded' ? 'refunded' : 'succeeded',
        chargeId: String(e.chargeId),
        amount: Number(e.amount),
        currency: String(e.currency),
        refundedAmount: Number(e.refundedAmount ?? 0),
        version: Number(e.version),
        lastEventId: String(e.lastEventId),
        updatedAtMs: Number(e.updatedAtMs),
      };
      return { state, etag: String(e.etag) };
    } catch (error) {
      if (classifyStoreError(error, 'paymentState.read', 'read') === 'notFound') return undefined;
      throw error;
    }
  }
}
