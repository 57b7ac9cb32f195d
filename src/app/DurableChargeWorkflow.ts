import * as df from 'durable-functions';
import type { ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import type { ChargeWorkflow, WorkflowStatus } from '../payments/ChargeWorkflow';
import type { ChargeResult } from '../payments/schema';
import { CHARGE_ORCHESTRATION } from './durableCharge';
import { statusWithoutInput } from './durableInstances';

/** The charge workflow on Durable Functions: one orchestration instance per payment key. */
export class DurableChargeWorkflow implements ChargeWorkflow {
  constructor(private readonly client: df.DurableClient) {}

  async status(instanceId: string): Promise<WorkflowStatus> {
    let status: df.DurableOrchestrationStatus;
    try {
      // Without the input (the payment and claim): `showInput: false` alone is dropped by durable-functions 3.5.
      status = await this.client.getStatus(instanceId, statusWithoutInput(this.client));
    } catch (error) {
      if (/HTTP 404/.test(String((error as Error)?.message))) return { state: 'none' };
      throw error;
    }
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
      await this.client.startNew(CHARGE_ORCHESTRATION, { instanceId, input });
      return 'started';
    } catch (error) {
      // startNew on a running (or pending) instance fails: that run is the one we wanted.
      const status = await this.status(instanceId);
      if (status.state === 'running') return 'running';
      throw error;
    }
  }
}
