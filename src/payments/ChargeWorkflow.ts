import { createHash } from 'node:crypto';
import type { ChargeOrchestrationInput } from './chargeOrchestration';
import type { ChargeResult } from './schema';

/** The state of the charge orchestration instance of one payment. */
export type WorkflowStatus =
  | { readonly state: 'none' }
  | { readonly state: 'running' }
  | { readonly state: 'completed'; readonly output: ChargeResult }
  | { readonly state: 'failed'; readonly reason: string };

/**
 * How the consumer starts and watches charge orchestrations: Durable Functions in Azure
 * (`src/app/DurableChargeWorkflow.ts`), an in-process executor in tests and the demo.
 */
export interface ChargeWorkflow {
  status(instanceId: string): Promise<WorkflowStatus>;
  /**
   * Starts a run of `instanceId` (durably: when it resolves, the run will happen). A run already pending or
   * running is left alone (not an error): `'running'` says so, `'started'` that this call created the run.
   */
  start(instanceId: string, input: ChargeOrchestrationInput): Promise<'started' | 'running'>;
}

/**
 * The `paymentCharge` entity key of one claim's work: a SHA-256 (hex) of the record's opaque id
 * (`Claim.recordId`), its generation (`createdAtMs`, see `IdempotencyRecord`) and the payload `digest`.
 *
 * One per (key, lifetime, payload), so a start is idempotent across the takeovers of one record,
 * while work started for an earlier lifetime of the key (before its record expired or was
 * swept), or for another payload, never answers this one: its output cannot acknowledge a
 * reused paymentId, and its fencing numbers cannot make a new lifetime's attempts look stale.
 */
export function chargeEntityKey(recordId: string, generation: number, digest: string): string {
  return createHash('sha256').update(`${recordId}\n${generation}\n${digest}`, 'utf8').digest('hex');
}

/** The orchestration instance id of a charge: one per entity key (see {@link chargeEntityKey}). */
export function chargeInstanceId(entityKey: string): string {
  return `payment-${entityKey}`;
}
