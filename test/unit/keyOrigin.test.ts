import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import { providerCall } from '../../src/payments/providerRounds';
import { HANDOFF_VERSION } from '../../src/payments/handOffPlan';

const HOUR_MS = 3_600_000;

/**
 * Issue 51 item 3: the key's age counts every wait before the provider loop (start queue, first episode, a suspension),
 * measured from its origin at each round, not as the age handed over at start plus the loop's time.
 */
describe('the key age a provider round plans with', () => {
  const originMs = Date.UTC(2026, 0, 1);
  const input = {
    idempotencyKey: 'pay-1',
    entityKey: 'e',
    attempt: 2,
    payment: { paymentId: 'pay-1', customerId: 'c', amount: 100, currency: 'EUR' },
    provider: { lookup: 'none', keyMemoryHours: 24 },
    handoff: { version: HANDOFF_VERSION },
    // An operator's retry at 21.5 h: the age at start is inside 90 % of the provider's 24 h memory.
    keyAgeAtStartMs: 21.5 * HOUR_MS,
    keyOriginMs: originMs,
  } as unknown as ChargeOrchestrationInput;

  test('a first round 3 h after the start (its loop just began) holds: the key is 24.5 h old, past the trusted memory', () => {
    const call = providerCall(input, 0, true, 0, originMs + 24.5 * HOUR_MS);
    expect(call.hold).toMatch(/past what the provider's key memory covers/);
  });

  test('the same round right after the start re-sends with the key (21.5 h: inside the trusted memory)', () => {
    const call = providerCall(input, 0, true, 0, originMs + 21.5 * HOUR_MS);
    expect(call.hold).toBeUndefined();
    expect(call.keyMemory?.trustedUntilMs).toBe(originMs + 0.9 * 24 * HOUR_MS);
  });
});
