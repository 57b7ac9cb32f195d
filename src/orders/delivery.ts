import type { Clock } from '../core/clock';
import type { ParkReason } from '../messaging/body';
import type { MessageInfo } from '../messaging/messageInfo';
import type { ParkingStore } from '../messaging/ParkingStore';
import { Outcome, reportOutcome, type OutcomeReport } from '../messaging/reportOutcome';
import type { Telemetry } from '../telemetry/Telemetry';

/** One delivery being handled: the raw body, what the trigger said of it and where to report. */
export interface Delivery {
  readonly consumer: string;
  readonly body: unknown;
  readonly info: MessageInfo;
  /** Telemetry whose log lines also reach this invocation's log. */
  readonly telemetry: Telemetry;
  readonly parking: ParkingStore;
  readonly clock: Clock;
}

/** Reports an outcome of this delivery (metric + one structured log line, never the payload). */
export function report(delivery: Delivery, outcome: Outcome, fields: Omit<OutcomeReport, 'consumer' | 'outcome' | 'info'> = {}): Outcome {
  reportOutcome(delivery.telemetry, { consumer: delivery.consumer, outcome, info: delivery.info, ...fields });
  return outcome;
}

/**
 * Parks the delivered body with a reason, then reports it (`Parked`, or `KeyReused` which also
 * counts `idempotency.key_reuse`, the alert). The caller then returns, so the message completes.
 * @throws StoreUnavailableError when the parking table cannot be written: the message must then be
 *         redelivered, not completed.
 */
export async function park(
  delivery: Delivery,
  reason: ParkReason,
  detail: string,
  fields: { idempotencyKey?: string; digest?: string } = {},
): Promise<Outcome> {
  await delivery.parking.park({ consumer: delivery.consumer, reason, detail, info: delivery.info, body: delivery.body });
  const outcome = reason === 'key-reused' ? Outcome.KeyReused : Outcome.Parked;
  return report(delivery, outcome, { reason, detail, ...fields });
}
