import { RecordStatus, type IdempotencyStore } from 'azure-functions-idempotency';
import { MetricNames, type Telemetry } from '../telemetry/Telemetry';
import type { CompleteRecordInput } from './completeRecord';
import type { ChargeResult } from './schema';

/** A late success: the provider's `succeeded` answer reaching a record that was settled otherwise. */

/**
 * A `succeeded` answer whose record write was fenced: another attempt owns the record. When the record says otherwise
 * (completed `failed`, `declined`, `rejected`, another charge, or a later generation), the customer was charged and the
 * record says not: the money invariant broke (a call outlived its lease, clock skew between workers). Counted
 * (`payments.charged_after_settle`, sev 1), logged at error with the key and the charge id; the runbook says what to
 * check at the provider (refund, or correct the record). A record still in progress, or completed with this very
 * charge, is no alarm (its run records or recorded it). A store that cannot be read: the alarm fires (it cannot be
 * shown that the record agrees).
 */
export async function alarmIfSettledOtherwise(store: IdempotencyStore, telemetry: Telemetry, recordInput: CompleteRecordInput): Promise<void> {
  const charge = recordInput.result as Extract<ChargeResult, { status: 'succeeded' }>;
  const record = await store.get(recordInput.claim.key).catch(() => undefined);
  const recorded = record?.result as ChargeResult | undefined;
  const sameGeneration = record?.createdAtMs === recordInput.claim.createdAtMs;
  if (record?.status === RecordStatus.InProgress && sameGeneration) return;
  if (sameGeneration && recorded?.status === 'succeeded' && recorded.chargeId === charge.chargeId) return;
  const says = record
    ? `${record.status}${recorded ? ` ${recorded.status}` : ''}, attempt ${record.attempt}${sameGeneration ? '' : ', another generation'}`
    : 'gone or unreadable';
  const t = telemetry;
  t.count(MetricNames.chargedAfterSettle, { consumer: 'payments' });
  t.log(
    'error',
    `payments: charged after the record was settled otherwise: the provider charged ${charge.chargeId} and the record says ${says}; check the charge at the provider, refund it or correct the record`,
    {
      consumer: 'payments',
      outcome: 'charged-after-settle',
      idempotencyKey: recordInput.claim.key.key,
      attempt: recordInput.claim.attempt,
      chargeId: charge.chargeId,
      recordStatus: record?.status ?? 'none',
      recordResult: recorded?.status ?? 'none',
    },
  );
}
