import { StoreUnavailableError } from 'azure-functions-idempotency';
import { failureSignature } from '../messaging/failureStrikes';
import { misconfigurationOf } from '../messaging/storeMisconfiguration';
import { MetricNames, type Telemetry } from '../telemetry/Telemetry';

/** How a thrown stream batch failed: a store outage, a table that cannot be used, or anything else (strikes count it). */
export type BatchFailureKind = 'unavailable' | 'misconfigured' | 'error';

/**
 * Counts and logs a stream batch that threw (the trigger retries it; the partition waits): `messages.batch_failures`
 * (`consumer`, `partitionId`, `kind`) and one log line. A table the consumer cannot use (`misconfigurationOf`: 401/403,
 * 404 `TableNotFound`, 409 `TableBeingDeleted`) is also counted `messages.store_misconfigured` with the table, status
 * and code, and logged at error level naming them (alert `stream-misconfigured`). Never a payload.
 * @returns the kind: `misconfigured` and `unavailable` are never strikes.
 */
export function reportBatchFailure(telemetry: Telemetry | undefined, consumer: string, partitionId: string, error: unknown): BatchFailureKind {
  const misconfigured = misconfigurationOf(error);
  const kind: BatchFailureKind = misconfigured ? 'misconfigured' : error instanceof StoreUnavailableError ? 'unavailable' : 'error';
  telemetry?.count(MetricNames.batchFailures, { consumer, partitionId, kind });
  if (misconfigured) {
    const { table, status, code, operation } = misconfigured;
    telemetry?.count(MetricNames.storeMisconfigured, { consumer, partitionId, table, status: String(status), code });
    telemetry?.log('error', `stream stopped: table ${table} answered ${status} ${code} (misconfigured); the partition waits until it is fixed`, {
      consumer,
      partitionId,
      table,
      status,
      code,
      operation,
      outcome: 'stopped',
    });
    return kind;
  }
  const operation = (error as { operation?: unknown }).operation;
  telemetry?.log(kind === 'unavailable' ? 'warn' : 'error', `stream batch failed (${kind}): retried, the partition waits`, {
    consumer,
    partitionId,
    kind,
    operation: typeof operation === 'string' ? operation : undefined,
    reason: failureSignature(error),
  });
  return kind;
}

/** Counts and logs a batch seen again after invocations that ended without an answer (a function timeout, a worker crash). */
export function reportUnanswered(telemetry: Telemetry | undefined, consumer: string, partitionId: string, unanswered: number): void {
  telemetry?.count(MetricNames.batchFailures, { consumer, partitionId, kind: 'no-answer' });
  telemetry?.log('error', `stream batch seen again after ${unanswered} invocation(s) without an answer (function timeout or worker crash)`, {
    consumer,
    partitionId,
    kind: 'no-answer',
    attempt: unanswered + 1,
  });
}
