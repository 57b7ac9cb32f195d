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
 * (`src/functions/payments.ts`), an in-process executor in tests and the demo.
 */
export interface ChargeWorkflow {
  status(instanceId: string): Promise<WorkflowStatus>;
  /** Starts a run of `instanceId`. A run already running is left alone (not an error). */
  start(instanceId: string, input: ChargeOrchestrationInput): Promise<void>;
}

/** The orchestration instance id of a payment: one per idempotency key, so a start is idempotent. */
export function chargeInstanceId(entityKey: string): string {
  return `payment-${entityKey}`;
}
