import { IdempotencyError } from 'azure-functions-idempotency';

/**
 * A status change arrived for an order that does not exist yet (the `OrderPlaced` may still be on
 * its way). Retryable: the message is redelivered until the order exists or the last delivery.
 */
export class OrderNotFoundError extends IdempotencyError {
  constructor(readonly orderId: string) {
    super(`order ${JSON.stringify(orderId)} does not exist yet; the status change is retried`, { retryable: true });
  }
}

/**
 * Every conditional replace of one order's status lost to a concurrent writer within the bounded
 * loop. Retryable: nothing was written; the next delivery decides again.
 */
export class StatusContentionError extends IdempotencyError {
  constructor(
    readonly orderId: string,
    readonly attempts: number,
  ) {
    super(`status of order ${JSON.stringify(orderId)} changed under ${attempts} consecutive attempts; retry later`, { retryable: true });
  }
}
