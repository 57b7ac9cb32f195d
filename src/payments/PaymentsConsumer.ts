import {
  ConfigurationError,
  IdempotencyError,
  LeaseLostError,
  payloadDigest,
  systemClock,
  type Claim,
  type Clock,
  type IdempotencyStore,
} from 'azure-functions-idempotency';
import { park, report, type Delivery } from '../messaging/delivery';
import { decodeKeyedMessage } from '../messaging/keyedMessage';
import type { MessageInfo } from '../messaging/messageInfo';
import { ParkReason, type ParkingStore } from '../messaging/ParkingStore';
import { Outcome, reportDownstreamKeyReuse } from '../messaging/reportOutcome';
import type { Telemetry } from '../telemetry/Telemetry';
import { chargeEntityKey, chargeInstanceId, type ChargeWorkflow } from './ChargeWorkflow';
import { chargeRunOf, type ChargeRun } from './chargeRun';
import type { ProviderCapability } from './providerLookup';
import { handOffPlan, type RetryBudget } from './chargeOrchestration';
import { finishedPaymentRow, paymentRow } from './paymentRow';
import { PaymentRequestedSchema, type ChargeResult, type PaymentRequested } from './schema';
import { ownedBy, type ShardLayout } from './shards';

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
  /** `handoff` (default): acked once the charge's run is durably started; `hold`: the charge awaited here (`PAYMENTS_DESIGN`). */
  readonly design?: PaymentsDesign;
  /** Handoff: the run's retry budget for transient provider failures (from `PAYMENT_RETRY_*`). */
  readonly retry?: RetryBudget;
  /** `PAYMENT_PROVIDER_LOOKUP` and `_KEY_MEMORY_HOURS`, passed to each run in its input (default the settings': none, 24 h). */
  readonly provider?: ProviderCapability;
  /** `PAYMENT_SHARD_*`: a payment another shard owns is parked, misrouted (default: one shard, every payment ours). */
  readonly shard?: ShardLayout;
}

/** `PAYMENTS_DESIGN`: hand the charge off to its orchestration, or hold the message until it finishes. */
export type PaymentsDesign = 'handoff' | 'hold';

/** The settings' default capability: no look-up, keys kept 24 h (Stripe's). */
export const DEFAULT_PROVIDER: ProviderCapability = { lookup: 'none', keyMemoryHours: 24 };

/** The handoff defaults: 60 min budget, 5 s first delay doubling to 5 min (the settings' defaults). */
export const DEFAULT_RETRY_BUDGET: RetryBudget = { budgetMs: 60 * 60_000, firstDelayMs: 5_000, maxDelayMs: 300_000 };

/** What one delivery ended as. The handler returns (message completed) for all of these. */
export type PaymentDeliveryResult =
  | { readonly outcome: typeof Outcome.Processed | typeof Outcome.ProcessedAfterTakeover | typeof Outcome.Duplicate; readonly result: ChargeResult }
  | { readonly outcome: typeof Outcome.Parked | typeof Outcome.KeyReused; readonly reason: string }
  /**
   * Handoff: acknowledged with the charge in its orchestration's hands: `handedOff` (this delivery claimed and
   * started it), `inProgress` (a duplicate that found the record in progress and its orchestration started).
   */
  | { readonly outcome: typeof Outcome.HandedOff | typeof Outcome.InProgress; readonly instanceId: string; readonly attempt: number };

/**
 * The payments consumer, free of the Functions runtime. Per delivery:
 *
 * 1. Decode and validate; a message no retry can fix is parked with its reason (then completed).
 * 2. Claim `payments` + MessageId, writing the Payment row in the same Table transaction.
 * 3. As the claimant, `handoff` (default): start the lifetime's charge orchestration with the claim and
 *    return (`handedOff`): the run completes the record and the Payment row (`completeRecord`, fenced by
 *    attempt). `hold`: start (or find) it, wait for its result, complete the claim with it.
 * 4. Duplicate: the stored result, no provider call. Reused key: parked + `key_reuse` alert.
 * 5. In progress elsewhere: `handoff`: its orchestration started -> acknowledged at once (`inProgress`).
 *    Otherwise wait (bounded) until the record completes (-> duplicate) or its lease lapses (-> take it
 *    over). A delivery is acknowledged only once its key's record is completed, its orchestration is
 *    durably started, or the message is parked, so nothing is lost; otherwise `PaymentRetryError` is thrown.
 */
export class PaymentsConsumer {
  private readonly clock: Clock;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly design: PaymentsDesign;

  constructor(private readonly deps: PaymentsConsumerDeps) {
    this.design = deps.design ?? 'handoff';
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
      schema: ownedBy(PaymentRequestedSchema, this.deps.shard),
      idOf: (p) => p.paymentId,
      idName: 'paymentId',
      maxBodyBytes: this.deps.maxBodyBytes,
    });
    if (!message.ok) return { outcome: Outcome.Parked, reason: `${message.reason}: ${message.detail}` };
    const { key, value: payment } = message;
    const digest = payloadDigest(payment);
    const fields = { idempotencyKey: key.key, digest };
    const deadline = this.clock.nowMs() + this.deps.waitBudgetMs;

    const handOff = this.design === 'handoff';
    // Handoff: a lapsed in-progress record is first answered `inProgress`, so that its orchestration is looked for
    // before anyone takes it over; set once the look found none and the lease has lapsed.
    let takeOverLapsed = !handOff;
    for (let poll = 0; ; poll++) {
      // A redelivery most likely finds its record (completed, or ours to take over): read before inserting.
      const readFirst = poll === 0 && (info.deliveryCount ?? 1) > 1;
      const claimedAtMs = this.clock.nowMs();
      const outcome = await this.deps.store.claim(key, digest, {
        effects: [paymentRow(payment, 'pending')],
        readFirst,
        keepLapsedInProgress: !takeOverLapsed,
      });
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
          const takeover = outcome.kind === 'reclaimed';
          // An expired record taken over starts a generation now, at attempt > 1: an earlier generation used the key.
          const keyUsedBefore = outcome.claim.attempt > 1 && outcome.claim.createdAtMs >= claimedAtMs;
          if (handOff) {
            const handed = await this.handOffWhenFree(outcome.claim, this.runOf(outcome.claim, payment, info.correlationId, keyUsedBefore), deadline);
            report(delivery, takeover ? Outcome.ProcessedAfterTakeover : Outcome.HandedOff, {
              ...fields,
              attempt: outcome.claim.attempt,
              reason: 'handed-off',
            });
            return handed;
          }
          const run = this.runOf(outcome.claim, payment, info.correlationId, keyUsedBefore);
          const result = await this.charge(outcome.claim, payment, deadline, run);
          const done = takeover ? Outcome.ProcessedAfterTakeover : Outcome.Processed;
          report(delivery, done, { ...fields, attempt: outcome.claim.attempt, reason: result.status });
          if (result.status === 'rejected' && result.code === 'idempotency-key-reused') {
            // Our record had expired, the provider's had not: the same alert as a key reuse we detect ourselves.
            const message = `key reused after expiry: the provider refused ${key.key} with another body (422)`;
            reportDownstreamKeyReuse(telemetry, { consumer: PAYMENTS_CONSUMER, ...fields, message });
          }
          return { outcome: done, result };
        }
        case 'inProgress': {
          const { record } = outcome;
          if (handOff) {
            // The record is in progress: acknowledged at once when its orchestration is durably started (the
            // message is no longer the only copy of the work); otherwise the lease rules below.
            const instanceId = chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
            const status = await this.workflow().status(instanceId);
            if (status.state === 'running') {
              report(delivery, Outcome.InProgress, { ...fields, attempt: record.attempt, reason: 'orchestration-started' });
              return { outcome: Outcome.InProgress, instanceId, attempt: record.attempt };
            }
            takeOverLapsed = true;
          }
          const now = this.clock.nowMs();
          if (poll === 0) report(delivery, Outcome.InProgress, { ...fields, attempt: record.attempt });
          if (now >= deadline) {
            throw new PaymentRetryError(`payment ${key.key} is in progress elsewhere (attempt ${record.attempt}); redeliver later`);
          }
          // Wait for the other delivery to finish, or for its lease to lapse so we can take over.
          await this.sleep(Math.max(1, Math.min(backoffMs(poll), record.leaseExpiresAtMs - now + 1, deadline - now)));
          break;
        }
      }
    }
  }

  /**
   * Handoff, as the claimant: starts the lifetime's orchestration with the claim (the run completes the record,
   * fenced by its attempt) and the retry budget. No status poll: `startNew` returning means the instance and its
   * start message are in the task hub. Returns undefined when a run of the instance was already in flight.
   */
  private async handOff(claim: Claim, { instanceId, input }: ChargeRun): Promise<PaymentDeliveryResult | undefined> {
    const started = await this.workflow().start(instanceId, {
      ...input,
      handoff: handOffPlan(claim, this.deps.retry ?? DEFAULT_RETRY_BUDGET),
    });
    return started === 'started' ? { outcome: Outcome.HandedOff, instanceId, attempt: claim.attempt } : undefined;
  }

  /**
   * Handoff, as the claimant: {@link handOff}, and when a run of this lifetime is already in flight (an older
   * attempt's, its start refused ours), waits for it to end and starts ours. Its output is never this payment's result:
   * the record is ours now, so that run is fenced before the provider and answers "not charged: the record moved on"
   * (taking it as the result ended payments `failed` in silence: issue 51 item 4). Past the deadline the message is
   * redelivered; the record stays in progress under this claim for the next delivery or the reconciler (run-superseded).
   * @throws PaymentRetryError when the older run is still going at the deadline
   */
  private async handOffWhenFree(claim: Claim, run: ChargeRun, deadline: number): Promise<PaymentDeliveryResult> {
    const workflow = this.workflow();
    const { instanceId } = run;
    for (let poll = 0; ; poll++) {
      const handed = await this.handOff(claim, run);
      if (handed) return handed;
      // Wait (at least once: a start refused while the status reads otherwise is a race) until the run no longer runs.
      for (let wait = 0; wait === 0 || (await workflow.status(instanceId)).state === 'running'; wait++) {
        const now = this.clock.nowMs();
        if (now >= deadline)
          throw new PaymentRetryError(
            `payment ${claim.key.key}: an older attempt's run is still going (attempt ${claim.attempt} waits for it); redeliver later`,
          );
        await this.sleep(Math.min(backoffMs(poll + wait), deadline - now));
      }
    }
  }

  /** The claim's run ({@link chargeRunOf}) with this consumer's provider capability and clock. */
  private runOf(claim: Claim, payment: PaymentRequested, correlationId: string | undefined, keyUsedBefore: boolean): ChargeRun {
    return chargeRunOf(claim, payment, { correlationId, keyUsedBefore, provider: this.deps.provider ?? DEFAULT_PROVIDER, nowMs: this.clock.nowMs() });
  }

  private workflow(): ChargeWorkflow {
    const workflow = this.deps.workflow;
    if (!workflow) throw new ConfigurationError('PaymentsConsumer has no charge workflow (use withWorkflow)');
    return workflow;
  }

  /**
   * As the claimant: make sure the claim's orchestration runs (starting it only when none runs and
   * none completed), wait for its result, then complete the claim with it. The orchestration and
   * entity are those of this record's lifetime and payload (`chargeEntityKey`): a completed run
   * of an earlier lifetime of the key, or of another payload, is never used.
   */
  private async charge(claim: Claim, payment: PaymentRequested, deadline: number, { instanceId, input }: ChargeRun): Promise<ChargeResult> {
    const workflow = this.workflow();
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
      await this.deps.store.complete(claim, result, [finishedPaymentRow(payment, result)]);
    } catch (error) {
      // Another delivery took the lapsed claim over; it completes the record from the same orchestration.
      if (!(error instanceof LeaseLostError)) throw error;
    }
    return result;
  }
}

/** 25 ms doubling to 1 s. */
function backoffMs(poll: number): number {
  return Math.min(1000, 25 * 2 ** Math.min(poll, 6));
}
