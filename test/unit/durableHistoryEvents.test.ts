/**
 * The pure helpers of the local Durable backend (tools/local/durable/historyEvents.ts). The retry delays are
 * computed on `df.RetryOptions` as durable-functions serializes them (the app's `chargeProvider` policy); the
 * failure text and action lists are hand-built in the SDK's formats (`$OutOfProcData$:`, schema V1 / V2).
 */
import * as df from 'durable-functions';
import { PROVIDER_RETRY } from '../../src/payments/chargePatience';
import { deterministicGuid, flattenActions, parseOrchestrationFailure, retryDelayMs, type SdkRetryOptions } from '../../tools/local/durable/historyEvents';

describe('historyEvents helpers', () => {
  test("retryDelayMs on df.RetryOptions as the SDK serializes them: the app's 2, 4, 8, 16 s; capped; none after the retry timeout", () => {
    const options = new df.RetryOptions(PROVIDER_RETRY.firstRetryIntervalMs, PROVIDER_RETRY.maxNumberOfAttempts);
    options.backoffCoefficient = PROVIDER_RETRY.backoffCoefficient;
    const serialized = JSON.parse(JSON.stringify(options)) as SdkRetryOptions;
    expect([0, 1, 2, 3].map((n) => retryDelayMs(serialized, n, 0))).toEqual([2_000, 4_000, 8_000, 16_000]);
    expect(retryDelayMs({ ...serialized, maxRetryIntervalInMilliseconds: 5_000 }, 3, 0)).toBe(5_000);
    expect(retryDelayMs({ ...serialized, retryTimeoutInMilliseconds: 10_000 }, 1, 10_000)).toBe(0);
  });

  test('parseOrchestrationFailure splits the error text from the state the SDK appends; flattenActions reads V1 and V2 action lists', () => {
    const state = { isDone: false, actions: [[{ actionType: 0, functionName: 'a' }]], error: 'the orchestrator threw' };
    expect(parseOrchestrationFailure(`false\n\n$OutOfProcData$:${JSON.stringify(state)}`)).toEqual({ error: 'the orchestrator threw', state });
    expect(parseOrchestrationFailure('plain failure')).toEqual({ error: 'plain failure' });
    expect(flattenActions({ isDone: false, actions: [[{ actionType: 0 }], [{ actionType: 7 }]] }).map((a) => a.actionType)).toEqual([0, 7]);
    expect(flattenActions({ isDone: false, actions: [[{ actionType: 0 }, { actionType: 7 }]] }).map((a) => a.actionType)).toEqual([0, 7]);
  });

  test('deterministicGuid is stable per name and GUID-shaped (version 5, RFC 4122 variant)', () => {
    const id = deterministicGuid('instance\nexecution\n0');
    expect(id).toBe(deterministicGuid('instance\nexecution\n0'));
    expect(id).not.toBe(deterministicGuid('instance\nexecution\n1'));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
