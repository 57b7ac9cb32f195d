import type { HeldKeysSource } from 'azure-functions-idempotency/table';
import type { Clock } from 'azure-functions-idempotency/internal';
import type { SweepReport } from 'azure-functions-idempotency/table';
import type { QueueMessage } from '../local/LocalQueue';
import type { QueueConsumer } from '../local/LocalServiceBus';
import type { FaultPlan } from './faults';
import type { Ledger, SendTag } from './ledger';

/** What every consumer of the chaos run shares: storage (behind the outage proxy) and the fault plan. */
export interface ChaosEnvironment {
  /** Table Storage through the outage proxy (the consumers' dedup and parking tables). */
  readonly tableConnectionString: string;
  /** Table Storage directly (the local Durable executor's backend, not cut by outages). */
  readonly directTableConnectionString: string;
  readonly faults: FaultPlan;
  readonly seed: number;
  /** The consumers' clock (real time plus the time phase's jump); the local Service Bus keeps real time. */
  readonly clock: Clock;
}

/** The expiry sweep of a part's store, run to the end (as many budgeted runs as it took). */
export interface PartSweepReport extends Pick<
  SweepReport,
  'scanned' | 'deleted' | 'deletedLocalRows' | 'skipped' | 'skippedLeased' | 'skippedChanged' | 'alreadyDeleted' | 'requests' | 'held' | 'heldExtended'
> {
  readonly runs: number;
  /** Runs that failed with a retryable store error and were run again. */
  readonly retried: number;
}

/** A sweep that did nothing (the start of a total, or no sweep at all). */
export function emptyPartSweep(): { -readonly [K in keyof PartSweepReport]: number } {
  return {
    scanned: 0,
    deleted: 0,
    deletedLocalRows: 0,
    skipped: 0,
    skippedLeased: 0,
    skippedChanged: 0,
    alreadyDeleted: 0,
    requests: 0,
    held: 0,
    heldExtended: 0,
    runs: 0,
    retried: 0,
  };
}

/** A part's share of the time phase (docs/demo.md, "The time phase"). */
export interface PartTimePhase {
  /** How far past now every record of the part expires at most (retention + lease). */
  readonly expiresWithinMs: number;
  /** True once the part may jump (its messages held for an operator are all in the DLQ). */
  ready(ledger: Ledger): boolean;
  /** Before the jump, at the real time: e.g. let background work finish and note what it recorded (optional). */
  beforeJump?(): Promise<void>;
  /** The operator's fix: held messages stop failing (called right after the jump). */
  fix(): void;
  /** The expiry sweep over the part's store, at the jumped time, keeping the records of what `holds` lists. */
  sweep(holds: readonly HeldKeysSource[]): Promise<PartSweepReport>;
  /** After the sweep and the DLQ resubmission: the reused keys after expiry to send (others are withheld). */
  sendsAfterSweep(ledger: Ledger): readonly QueueMessage<SendTag>[];
}

/** A consumer's verdict on its own workload. */
export interface PartReport {
  readonly name: string;
  /** Logical messages of its workload (originals, malformed and reused-key ones; not copies). */
  readonly messages: number;
  /** Distinct valid business ids (payments, orders). */
  readonly unique: number;
  readonly duplicatesDetected: number;
  readonly parkedByReason: Readonly<Record<string, number>>;
  /** Logical messages neither completed as expected, nor parked, nor dead-lettered, nor dropped by broker dedup. */
  readonly lostMessages: readonly string[];
  /**
   * Logical messages acknowledged with their work handed off whose run was still going (Pending, Running) when the
   * checks ran, each with its run's status: not lost, not proven (tools/demo/unfinishedRuns.ts). Payments only.
   */
  readonly unfinishedMessages?: readonly string[];
  /** Business ids whose effect happened more than once (payments: charged twice). */
  readonly doubleEffects: readonly string[];
  /** Every broken expectation, in words. */
  readonly violations: readonly string[];
  /** Consumer-specific figures (e.g. effective charges and where they were counted). */
  readonly details: Readonly<Record<string, unknown>>;
}

/**
 * One consumer taking part in the chaos run: its handler (driven by the engine), its seeded
 * workload, and its own check of the outcome: payments (`paymentsPart.ts`) and orders (`ordersPart.ts`).
 */
export interface ChaosPart {
  readonly consumer: QueueConsumer;
  /** Sends made at the start, in order. */
  readonly initialSends: readonly QueueMessage<SendTag>[];
  /** Sends that wait until logical message `index` is settled (completed, or dead-lettered: then a part may withhold them). */
  sendsAfterSettled(index: number, settled: 'completed' | 'deadLettered'): readonly QueueMessage<SendTag>[];
  /** All sends of the workload, including those that wait. */
  readonly plannedSends: number;
  /** Planned sends that will never be made (withheld after a dead-lettering). */
  withheldSends(): number;
  /** Checks the invariants once every message is settled and background work is drained. */
  verify(ledger: Ledger): Promise<PartReport>;
  /** Waits for background work (e.g. Durable runs) and stops it. */
  drain(): Promise<void>;
  /** Stops what the part started (e.g. the Durable host), after `verify`. */
  close?(): Promise<void>;
  /** The part's share of the time phase, when it has one (payments). */
  readonly timePhase?: PartTimePhase;
}

/** How many sends `messages` make: each message once plus its producer copies. */
export function sendsOf(messages: Iterable<{ readonly extraCopies: number }>): number {
  let sends = 0;
  for (const m of messages) sends += 1 + m.extraCopies;
  return sends;
}
