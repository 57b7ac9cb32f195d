import {
  ConfigurationError,
  IdempotencyError,
  LeaseLostError,
  payloadDigest,
  systemClock,
  type Claim,
  type Clock,
  type IdempotencyStore,
  type LocalEffect,
} from '../core/public';
import { park, report, type Delivery } from '../messaging/delivery';
import { decodeKeyedMessage } from '../messaging/keyedMessage';
import type { MessageInfo } from '../messaging/messageInfo';
import { ParkReason, type ParkingStore } from '../messaging/ParkingStore';
import { Outcome, reportDownstreamKeyReuse } from '../messaging/reportOutcome';
import type { Telemetry } from '../telemetry/Telemetry';
import { chargeEntityKey, chargeInstanceId, type ChargeWorkflow } from './ChargeWorkflow';
import { PaymentRequestedSchema, type ChargeResult, type PaymentRequested } from './schema';

export const PAYMENTS_CONSUMER = 'payments';

/** The charge could not be finished in this delivery; Service Bus must redeliver the message. */
export class PaymentRetryError extends IdempotencyError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retryable: true });
  }
}

export interface PaymentsConsumerDeps {
  readonly store: IdempotencyStore;
  readonly parking: ParkingStore;
  /** Required to charge; Durable's client is per invocation, so it is often set by {@link PaymentsConsumer.withWorkflow}. */
  readonly workflow?: ChargeWorkflow;
  readonly telemetry: Telemetry;
  readonly clock?: Clock;
  readonly sleep?: (ms: number) => Promise<void>;
  /** How long one delivery waits for its charge (or for another delivery's lease) before asking for redelivery. */
  readonly waitBudgetMs: number;
  /** Largest body accepted; larger ones are parked. */
  readonly maxBodyBytes?: number;
}

/** What one delivery ended as. The handler returns (message completed) for all of these. */
export type PaymentDeliveryResult =
  | { readonly outcome: typeof Outcome.Processed | typeof Outcome.ProcessedAfterTakeover | typeof Outcome.Duplicate; readonly result: ChargeResult }
  | { readonly outcome: typeof Outcome.Parked | typeof Outcome.KeyReused; readonly reason: string };

/**
 * The payments consumer, free of the Functions runtime. Per delivery:
 *
 * 1. Decode and validate; a message no retry can fix is parked with its reason (then completed).
 * 2. Claim `payments` + MessageId, writing the Payment row in the same Table transaction.
 * 3. As the claimant: start (or find) the charge orchestration for the key, wait for its result,
 *    complete the claim with it, updating the Payment row in the same transaction.
 * 4. Duplicate: the stored result, no provider call. Reused key: parked + `key_reuse` alert.
 * 5. In progress elsewhere: wait (bounded) until the record completes (-> duplicate) or its lease
 *    lapses (-> take it over). A delivery is acknowledged only once its key's record is completed
 *    or the message is parked, so nothing is lost; otherwise `PaymentRetryError` is thrown.
 */
export class PaymentsConsumer {
  private readonly clock: Clock;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: PaymentsConsumerDeps) {
    this.clock = deps.clock ?? systemClock;
    this.sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** The same consumer driving another workflow client (Durable's client is per invocation). */
  withWorkflow(workflow: ChargeWorkflow): PaymentsConsumer {
    return new PaymentsConsumer({ ...this.deps, workflow });
  }

  /**
   * Handles one delivery. Returns when the message may be completed.
   * @throws PaymentRetryError or StoreUnavailableError (retryable) when it must be redelivered.
   */
  async handle(body: unknown, info: MessageInfo, telemetry: Telemetry = this.deps.telemetry): Promise<PaymentDeliveryResult> {
    const delivery: Delivery = { consumer: PAYMENTS_CONSUMER, body, info, telemetry, parking: this.deps.parking, clock: this.clock };
    const message = await decodeKeyedMessage(delivery, {
      schema: PaymentRequestedSchema,
      idOf: (p) => p.paymentId,
      idName: 'paymentId',
      maxBodyBytes: this.deps.maxBodyBytes,
    });
    if (!message.ok) return { outcome: Outcome.Parked, reason: `${message.reason}: ${message.detail}` };
    const { key, value: payment } = message;
    const digest = payloadDigest(payment);
    const fields = { idempotencyKey: key.key, digest };
    const deadline = this.clock.nowMs() + this.deps.waitBudgetMs;

    for (let poll = 0; ; poll++) {
      // A redelivery most likely finds its record (completed, or ours to take over): read before inserting.
      const readFirst = poll === 0 && (info.deliveryCount ?? 1) > 1;
      const outcome = await this.deps.store.claim(key, digest, { effects: [paymentRow(payment, 'pending')], readFirst });
      switch (outcome.kind) {
        case 'duplicate': {
          report(delivery, Outcome.Duplicate, { ...fields, reason: outcome.cached ? 'cached' : 'completed', attempt: outcome.record.attempt });
          return { outcome: Outcome.Duplicate, result: outcome.record.result as ChargeResult };
        }
        case 'keyReused': {
          const detail = `MessageId ${key.key} was first used for a payload with digest ${outcome.record.digest}; this one has ${digest}`;
          await park(delivery, ParkReason.KeyReused, detail, fields);
          return { outcome: Outcome.KeyReused, reason: detail };
        }
        case 'claimed':
        case 'reclaimed': {
          const result = await this.charge(outcome.claim, payment, deadline, info.correlationId);
          const done = outcome.kind === 'reclaimed' ? Outcome.ProcessedAfterTakeover : Outcome.Processed;
          report(delivery, done, { ...fields, attempt: outcome.claim.attempt, reason: result.status });
          if (result.status === 'rejected' && result.code === 'idempotency-key-reused') {
            // Our record had expired, the provider's had not: the same alert as a key reuse we detect ourselves.
            const message = `key reused after expiry: the provider refused ${key.key} with another body (422)`;
            reportDownstreamKeyReuse(telemetry, { consumer: PAYMENTS_CONSUMER, ...fields, message });
          }
          return { outcome: done, result };
        }
        case 'inProgress': {
          const now = this.clock.nowMs();
          if (poll === 0) report(delivery, Outcome.InProgress, { ...fields, attempt: outcome.record.attempt });
          if (now >= deadline) {
            throw new PaymentRetryError(`payment ${key.key} is in progress elsewhere (attempt ${outcome.record.attempt}); redeliver later`);
          }
          // Wait for the other delivery to finish, or for its lease to lapse so we can take over.
          await this.sleep(Math.max(1, Math.min(backoffMs(poll), outcome.record.leaseExpiresAtMs - now + 1, deadline - now)));
          break;
        }
      }
    }
  }

  /**
   * As the claimant: make sure the claim's orchestration runs (starting it only when none runs and
   * none completed), wait for its result, then complete the claim with it. The orchestration and
   * entity are those of this record's lifetime and payload (`chargeEntityKey`): a completed run
   * of an earlier lifetime of the key, or of another payload, is never used.
   */
  private async charge(claim: Claim, payment: PaymentRequested, deadline: number, correlationId: string | undefined): Promise<ChargeResult> {
    const workflow = this.deps.workflow;
    if (!workflow) throw new ConfigurationError('PaymentsConsumer has no charge workflow (use withWorkflow)');
    const entityKey = chargeEntityKey(claim.recordId, claim.createdAtMs, claim.digest);
    const instanceId = chargeInstanceId(entityKey);
    const input = { idempotencyKey: claim.key.key, entityKey, digest: claim.digest, attempt: claim.attempt, payment, correlationId };
    let status = await workflow.status(instanceId);
    if (status.state === 'none' || status.state === 'failed') {
      await workflow.start(instanceId, input);
      status = { state: 'running' };
    }
    for (let poll = 0; status.state === 'running' || status.state === 'none'; poll++) {
      const now = this.clock.nowMs();
      if (now >= deadline) {
        // The orchestration goes on; the record stays in progress until its lease lapses.
        throw new PaymentRetryError(`charge of payment ${claim.key.key} did not finish within ${this.deps.waitBudgetMs} ms; redeliver later`);
      }
      await this.sleep(Math.min(backoffMs(poll), deadline - now));
      status = await workflow.status(instanceId);
    }
    if (status.state === 'failed') {
      await this.deps.store.release(claim, `charge failed: ${status.reason}`).catch(() => undefined);
      throw new PaymentRetryError(`charge of payment ${claim.key.key} failed transiently: ${status.reason}`);
    }
    const result = status.output;
    try {
      await this.deps.store.complete(claim, result, [paymentRow(payment, result.status, result.status === 'succeeded' ? result.chargeId : undefined)]);
    } catch (error) {
      // Another delivery took the lapsed claim over; it completes the record from the same orchestration.
      if (!(error instanceof LeaseLostError)) throw error;
    }
    return result;
  }
}

function paymentRow(payment: PaymentRequested, state: string, chargeId?: string): LocalEffect {
  return {
    name: 'payment',
    properties: {
      paymentId: payment.paymentId,
      customerId: payment.customerId,
      amount: payment.amount,
      currency: payment.currency,
      state,
      chargeId: chargeId ?? null,
    },
  };
}

/** 25 ms doubling to 1 s. */
function backoffMs(poll: number): number {
  return Math.min(1000, 25 * 2 ** Math.min(poll, 6));
}
