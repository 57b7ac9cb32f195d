import type { IdempotencyRecord } from 'azure-functions-idempotency';
import type { ConsumerExtension } from 'azure-functions-idempotency/operator';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { PAYMENT_ROW } from '../../src/payments/paymentRow';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import { HELD_FOR_OPERATOR } from '../../src/payments/providerLookup';
import type { ChargeResult } from '../../src/payments/schema';

/** A Durable run's status by instance id (`Running`, `Completed`, `Failed`...), or undefined when there is no such instance. */
export type RunStatusOf = (instanceId: string) => Promise<string | undefined>;

/** The run statuses in which a charge run still goes on (the record may still be written by it). */
export const RUNNING_STATUSES: ReadonlySet<string> = new Set(['Running', 'Pending', 'Suspended', 'ContinuedAsNew']);

/** The charge orchestration of a record's lifetime and payload (`payment-<chargeEntityKey>`), as the consumer starts it. */
export function chargeRunOf(record: Pick<IdempotencyRecord, 'recordId' | 'createdAtMs' | 'digest'>): string {
  return chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
}

/**
 * What the app adds to the operator's console for `payments` (the core knows nothing of payments):
 * - a record completed with a `failed` charge reads as `failed`, one held for an operator as `held`;
 * - `show` adds the charge run's instance id and status, and the Payment row's state, chargeId or reason (never the
 *   customer, amount or currency: payload);
 * - a release is refused, an eviction unless forced, while the charge run is Running, Pending or Suspended: it would
 *   write the record after the operator.
 * `runStatusOf` reads the run's status (the Durable extension's HTTP API: `durableHttpStatus`); `skipRunCheck` leaves it
 * out (no Durable endpoint reachable: the operator takes the risk, said on each show).
 */
export function paymentsExtension(runStatusOf: RunStatusOf, options: { readonly skipRunCheck?: boolean } = {}): ConsumerExtension {
  const statusOf = async (record: IdempotencyRecord): Promise<string> => {
    if (options.skipRunCheck) return 'not checked (--skip-run-check)';
    return (await runStatusOf(chargeRunOf(record))) ?? 'none';
  };
  return {
    consumer: PAYMENTS_CONSUMER,
    classify: (record) => {
      const result = record.result as ChargeResult | undefined;
      if (result?.status !== 'failed') return undefined;
      return result.code === HELD_FOR_OPERATOR ? 'held' : 'failed';
    },
    describe: async (record, context) => {
      const row = await context.readLocalRow(PAYMENT_ROW);
      const facts = row
        ? [`state ${textOf(row.state)}`, row.chargeId ? `chargeId ${textOf(row.chargeId)}` : '', row.reason ? `reason ${textOf(row.reason)}` : '']
        : ['none'];
      return { 'charge run': `${chargeRunOf(record)}: ${await statusOf(record)}`, 'payment row': facts.filter(Boolean).join(', ') };
    },
    activeWork: async (record) => {
      if (options.skipRunCheck) return undefined;
      const status = await runStatusOf(chargeRunOf(record));
      return status !== undefined && RUNNING_STATUSES.has(status) ? `its charge run ${chargeRunOf(record)} is ${status}` : undefined;
    },
  };
}

/**
 * A run's status through the Durable extension's HTTP API (`GET instances/{id}`): locally
 * `http://127.0.0.1:17071/durabletask/`, in Azure `https://<app>.azurewebsites.net/runtime/webhooks/durabletask/` with
 * the `durabletask_extension` system key. 404: no such instance.
 * @throws Error when the endpoint does not answer or answers otherwise (the command then refuses: it cannot tell)
 */
export function durableHttpStatus(baseUrl: string, key?: string): RunStatusOf {
  return async (instanceId) => {
    const url = new URL(`instances/${encodeURIComponent(instanceId)}`, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
    if (key) url.searchParams.set('code', key);
    let response: Response;
    try {
      response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    } catch (error) {
      throw new Error(
        `the Durable endpoint ${url.origin} did not answer for ${instanceId} (${(error as Error).message}): pass --durable-url, or --skip-run-check`,
        { cause: error },
      );
    }
    if (response.status === 404) return undefined;
    const text = await response.text();
    if (!response.ok) throw new Error(`reading run ${instanceId}: HTTP ${response.status} ${text.slice(0, 200)}`);
    const status = (JSON.parse(text) as { runtimeStatus?: unknown }).runtimeStatus;
    return typeof status === 'string' ? status : 'unknown';
  };
}

/** A row property as text (rows hold strings, numbers and booleans). */
function textOf(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}
