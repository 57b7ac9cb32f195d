import { type CrashPoint } from './faults';
import type { PartReport, PartSweepReport } from './part';

/** The time phase's figures (payments): the jump, the sweep, the resubmissions, the reused keys after expiry. */
export interface TimePhaseReport {
  /** Completed deliveries (all queues) when it ran, and the run's elapsed time then. */
  readonly atCompleted: number;
  readonly atElapsedMs: number;
  /** How far the consumers' clock jumped (retention + lease + 1 minute). */
  readonly jumpedMs: number;
  /** Messages still in the queue (waiting or locked) at the jump: their time to live ran out, so they were dead-lettered. */
  readonly expiredAtJump: number;
  /** Whether the sweep kept the records of dead-lettered payments. */
  readonly sweepHold: boolean;
  readonly sweep: PartSweepReport;
  readonly sweepMs: number;
  /** Payments held for an operator (dead-lettered before the phase), and those charged before their DLQ. */
  readonly heldForOperator: number;
  readonly heldChargedBeforeDlq: number;
  /** Dead-lettered copies resubmitted after the sweep, and what became of their messages. */
  readonly resubmitted: number;
  readonly resubmittedMessages: number;
  readonly resubmittedCompleted: number;
  readonly resubmittedParked: number;
  /** Resubmitted messages that never completed (dead-lettered again or unsettled): an invariant failure. */
  readonly resubmittedStuck: number;
  /** Reused keys after expiry: planned, sent, withheld (original not settled before the jump). */
  readonly reusedAfterExpiry: number;
  readonly reusedAfterExpirySent: number;
  readonly reusedAfterExpiryWithheld: number;
  /** Sent ones: refused by the provider (rejected; of which 422), charged for their own amount, parked key-reused. */
  readonly reusedAfterExpiryRejected: number;
  readonly reusedAfterExpiryRejected422: number;
  readonly reusedAfterExpiryCharged: number;
  readonly reusedAfterExpiryParked: number;
  /** Ordinary reused-key messages delivered after the sweep and processed as new payments. */
  readonly reusedKeysProcessedAsNewAfterExpiry: number;
  /** Keys whose record is neither completed nor swept while no message of theirs is in the DLQ (must be 0). */
  readonly leftInProgress: number;
  /** Local rows (Payment rows) left without their marker at the end (must be 0: the sweep deletes them with it). */
  readonly orphanLocalRows: number;
}

/** A snapshot while the run goes on. */
export interface ChaosProgress {
  readonly elapsedMs: number;
  readonly sent: number;
  readonly plannedSends: number;
  readonly deliveries: number;
  readonly completed: number;
  readonly redeliveries: number;
  readonly inFlight: number;
  readonly crashes: number;
  readonly deadLettered: number;
  readonly outage: boolean;
  /** Charges the demo's own provider made so far (undefined with an external provider). */
  readonly charges?: number;
  /** Set once, on the progress line of the time phase. */
  readonly phase?: string;
}

/** The run's figures and verdict; `ok` is false when an invariant failed (listed in `violations`). */
export interface ChaosReport {
  readonly ok: boolean;
  readonly violations: string[];
  readonly seed: number;
  readonly messages: number;
  readonly uniquePayments: number;
  readonly uniqueOrders: number;
  /** Logical messages per consumer (how `messages` was split). */
  readonly messagesByPart: Record<string, number>;
  /** Orders: order documents in the emulator's container at the end (each valid order at most once). */
  readonly ordersCreated: number;
  /** Orders: status changes the handler applied (a newer version written with If-Match). */
  readonly statusApplied: number;
  /** Orders: status changes the handler ignored as stale (older) or repeated (same version). */
  readonly staleVersionsIgnored: number;
  /** Orders: parked orders messages by reason. */
  readonly ordersParkedByReason: Record<string, number>;
  readonly sends: number;
  /** Extra copies the producer sent (accepted by the broker). */
  readonly producerDuplicates: number;
  /** Sends dropped by broker duplicate detection. */
  readonly brokerDropped: number;
  readonly deliveries: number;
  readonly redeliveries: number;
  /** producerDuplicates + redeliveries. */
  readonly duplicatesDelivered: number;
  /** Deliveries the consumers reported as duplicates. */
  readonly duplicatesDetected: number;
  readonly crashesInjected: number;
  readonly crashesByPoint: Record<CrashPoint, number>;
  /** Handlers stalled past their lock (then completing with a lock-lost error). */
  readonly slowHandlers: number;
  readonly providerFaults: Record<string, number>;
  /** The declared capability (`by-key, key memory 24 h`) and the provider's look-ups (`GET /v1/charges?idempotency_key=`; null: an external provider's are not counted). */
  readonly providerLookup: { readonly mode: string; readonly lookups: number | null };
  readonly storageOutages: number;
  readonly connectionsReset: number;
  readonly abandoned: number;
  readonly lockExpired: number;
  readonly lockLost: number;
  readonly deadLettered: number;
  readonly deadLetteredByReason: Record<string, number>;
  readonly deadLetteredMessages: Array<{ queue: string; messageId: string; deliveryCount: number; reason: string; lastError: string }>;
  readonly parked: number;
  readonly parkedByReason: Record<string, number>;
  readonly effectiveCharges: number;
  readonly effectiveChargesSource: string;
  readonly expectedCharges: number;
  readonly lost: number;
  readonly lostMessages: string[];
  /** Handed off, their run still Pending or Running at verification (each with its status): apart from lost; fails the run too. */
  readonly unfinished: number;
  readonly unfinishedMessages: string[];
  readonly doubleCharged: number;
  /** The time phase's figures; null when it was off (or there were no payments). */
  readonly timePhase: TimePhaseReport | null;
  readonly parts: PartReport[];
  readonly elapsedMs: number;
}
