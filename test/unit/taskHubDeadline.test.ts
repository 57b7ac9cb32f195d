import type * as df from 'durable-functions';
import { StoreUnavailableError } from 'azure-functions-idempotency';
import { DurableChargeWorkflow, taskHubError } from '../../src/app/DurableChargeWorkflow';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';

/** A deadline that fires when the test says so (no real time). */
function manualSleep() {
  const waiting: Array<() => void> = [];
  return { sleep: () => new Promise<void>((resolve) => waiting.push(resolve)), fire: () => waiting.splice(0).forEach((resolve) => resolve()) };
}

const input = {} as ChargeOrchestrationInput;

describe('the Durable client has a deadline, and a task hub that does not answer is a store outage (issue 43 item 6)', () => {
  test('a start that never answers: StoreUnavailableError at the deadline (the trigger rides it out), not a hang', async () => {
    const waited: number[] = [];
    const client = { startNew: () => new Promise(() => undefined), getStatus: () => new Promise(() => undefined) } as unknown as df.DurableClient;
    // The deadline's wait ends at once here: the start, then the status read after it, each time out.
    const workflow = new DurableChargeWorkflow(client, { timeoutMs: 1_000, sleep: async (ms) => void waited.push(ms) });
    await expect(workflow.start('payment-x', input)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(waited).toEqual([1_000, 1_000]);
  });

  test('a 5xx or a reset is a store outage; a 4xx is the request’s own fault; an answer in time passes through', async () => {
    expect(taskHubError('startNew', new Error('Webhook returned unexpected status HTTP 503'))).toBeInstanceOf(StoreUnavailableError);
    expect(taskHubError('startNew', new Error('connect ECONNRESET'))).toBeInstanceOf(StoreUnavailableError);
    const badRequest = new Error('HTTP 400 Bad Request');
    expect(taskHubError('startNew', badRequest)).toBe(badRequest);
    const clock = manualSleep();
    const client = { startNew: async () => 'payment-y' } as unknown as df.DurableClient;
    await expect(new DurableChargeWorkflow(client, { timeoutMs: 1_000, sleep: clock.sleep }).start('payment-y', input)).resolves.toBe('started');
    clock.fire(); // late: nothing is waiting on it any more
  });
});
