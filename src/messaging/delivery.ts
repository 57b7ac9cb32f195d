import type { Clock } from 'azure-functions-idempotency';
import type { Telemetry } from '../telemetry/Telemetry';
import type { MessageInfo } from './messageInfo';
import { ParkReason, type ParkingStore } from './ParkingStore';
import { Outcome, reportOutcome, type OutcomeReport } from './reportOutcome';

/**
 * The delivery pipeline both consumers use: decode and key the message (`decodeKeyedMessage`),
 * claim (the consumer's store), or park what no retry can fix ({@link park}), and report every
 * outcome once ({@link report}: metrics and one structured log line).
 */

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
  const outcome = reason === ParkReason.KeyReused ? Outcome.KeyReused : Outcome.Parked;
  return report(delivery, outcome, { reason, detail, ...fields });
}
