import * as df from 'durable-functions';
import { StoreUnavailableError } from 'azure-functions-idempotency';
import type { ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import type { ChargeWorkflow, WorkflowStatus } from '../payments/ChargeWorkflow';
import type { ChargeResult } from '../payments/schema';
import { CHARGE_ORCHESTRATION } from './durableCharge';
import { statusOrUnknown, statusWithoutInput } from './durableInstances';

/**
 * How long one call of the Durable client may take: durable-functions sets no timeout on its HTTP calls to the
 * extension, which itself waits on the task hub's storage. Past it the call counts as the task hub not answering.
 */
export const TASK_HUB_CALL_TIMEOUT_MS = 15_000;

export interface DurableChargeWorkflowOptions {
  readonly timeoutMs?: number;
  /** The wait behind the deadline (default a real timer; the simulator passes its virtual clock's). */
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * The charge workflow on Durable Functions: one orchestration instance per payment key. Every call has a deadline,
 * and a task hub that does not answer (a timeout, a 5xx, a connection error) is a {@link StoreUnavailableError}: the
 * trigger rides it out like a store outage (`rideOutStoreOutage`: `messages.store_outage.waits`, alert
 * `store-outage`) instead of spending a delivery on it.
 */
export class DurableChargeWorkflow implements ChargeWorkflow {
  private readonly timeoutMs: number;

  constructor(
    private readonly client: df.DurableClient,
    private readonly options: DurableChargeWorkflowOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? TASK_HUB_CALL_TIMEOUT_MS;
  }

  async status(instanceId: string): Promise<WorkflowStatus> {
    let status: df.DurableOrchestrationStatus | undefined;
    try {
      // Without the input (the payment and claim): `showInput: false` alone is dropped by durable-functions 3.5.
      status = await this.call('getStatus', () => statusOrUnknown(this.client, instanceId, statusWithoutInput(this.client)));
    } catch (error) {
      throw taskHubError('getStatus', error);
    }
    if (!status) return { state: 'none' };
    switch (status.runtimeStatus) {
      case df.OrchestrationRuntimeStatus.Completed:
        return { state: 'completed', output: status.output as ChargeResult };
      case df.OrchestrationRuntimeStatus.Failed:
      case df.OrchestrationRuntimeStatus.Terminated:
      case df.OrchestrationRuntimeStatus.Canceled:
        return {
          state: 'failed',
          reason: `orchestration ${String(status.runtimeStatus).toLowerCase()}: ${JSON.stringify(status.output ?? null).slice(0, 300)}`,
        };
      default:
        return { state: 'running' };
    }
  }

  async start(instanceId: string, input: ChargeOrchestrationInput): Promise<'started' | 'running'> {
    try {
      await this.call('startNew', () => this.client.startNew(CHARGE_ORCHESTRATION, { instanceId, input }));
      return 'started';
    } catch (error) {
      // startNew on a running (or pending) instance fails: that run is the one we wanted.
      const status = await this.status(instanceId);
      if (status.state === 'running') return 'running';
      throw taskHubError('startNew', error);
    }
  }

  /** One client call within the deadline; past it, StoreUnavailableError (the call itself may still land). */
  private call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    const sleep = this.options.sleep ?? realSleep;
    const timeout = new Promise<never>((_, reject) => {
      void sleep(this.timeoutMs).then(() =>
        reject(
          new StoreUnavailableError(`the Durable task hub did not answer ${operation} within ${this.timeoutMs} ms`, `taskHub.${operation}`, undefined, true),
        ),
      );
    });
    timeout.catch(() => undefined); // the call answered first: nothing waits on the deadline any more
    return Promise.race([run(), timeout]);
  }
}

/** A real timer that does not keep the process alive. */
function realSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * The client's error as the trigger should see it: a 4xx other than the ones handled (404 unknown, 409 running) is
 * the request's own fault and stays as it is; anything else (5xx, a reset, a timeout) is the task hub not answering.
 */
export function taskHubError(operation: string, error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/HTTP 4\d\d\b/.test(message) || /\b4\d\d\b.*(Bad Request|Forbidden|Unauthorized)/i.test(message)) return error;
  return new StoreUnavailableError(
    `the Durable task hub failed ${operation}: ${message.slice(0, 300)}`,
    `taskHub.${operation}`,
    error,
    operation === 'startNew',
  );
}
