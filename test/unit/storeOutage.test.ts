import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StoreUnavailableError, StoreRequestError } from 'azure-functions-idempotency/internal';
import { HOST_MAX_AUTO_LOCK_RENEWAL_MS, nextOutageWaitMs, rideOutPlanOf, rideOutStoreOutage, type RideOutPlan } from '../../src/messaging/storeOutage';
import { paymentsRideOutPlan } from '../../src/app/paymentsFunctions';
import { loadSettings } from '../../src/config/settings';

const outage = () => new StoreUnavailableError('the table did not answer', 'claim');

/** A clock that only moves when the loop sleeps (or an attempt takes time). */
function fakeTime() {
  let now = 1_000_000;
  const sleeps: number[] = [];
  return {
    nowMs: () => now,
    advance: (ms: number) => void (now += ms),
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
    sleeps,
  };
}

describe('the ride-out plan', () => {
  test('host.json renews a lock for HOST_MAX_AUTO_LOCK_RENEWAL_MS, and functionTimeout outlasts it', () => {
    const host = JSON.parse(readFileSync(join(__dirname, '..', '..', 'host.json'), 'utf8')) as {
      functionTimeout: string;
      extensions: { serviceBus: { maxAutoLockRenewalDuration: string } };
    };
    const ms = (hms: string) => hms.split(':').reduce((sum, part) => sum * 60 + Number(part), 0) * 1000;
    expect(ms(host.extensions.serviceBus.maxAutoLockRenewalDuration)).toBe(HOST_MAX_AUTO_LOCK_RENEWAL_MS);
    expect(ms(host.functionTimeout)).toBeGreaterThan(HOST_MAX_AUTO_LOCK_RENEWAL_MS);
  });

  test("the app's plan: the renewal less one attempt (80 % of a lease + 3 store timeouts): 237 s on the defaults", () => {
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' });
    expect(paymentsRideOutPlan(settings)).toEqual({ budgetMs: 237_000, firstDelayMs: 1_000, maxDelayMs: 15_000 });
    expect(rideOutPlanOf({ attemptMs: 400_000 }).budgetMs).toBe(0);
  });

  test('waits double from 1 s to 15 s; none starts a try past the budget', () => {
    const plan: RideOutPlan = { budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 15_000 };
    expect([0, 1, 2, 3, 4, 5].map((w) => nextOutageWaitMs(plan, 0, w))).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000]);
    expect(nextOutageWaitMs(plan, 45_000, 5)).toBe(15_000);
    expect(nextOutageWaitMs(plan, 45_001, 5)).toBeUndefined();
    expect(nextOutageWaitMs({ ...plan, budgetMs: 0 }, 0, 0)).toBeUndefined();
  });
});

describe('rideOutStoreOutage', () => {
  test('an outage shorter than the budget: the delivery waits it out and succeeds, reporting each wait and the recovery', async () => {
    const time = fakeTime();
    const events: string[] = [];
    let tries = 0;
    const result = await rideOutStoreOutage(
      async () => {
        tries++;
        if (time.nowMs() < 1_000_000 + 200_000) throw outage(); // a 200 s outage
        return 'acked';
      },
      {
        plan: rideOutPlanOf({ attemptMs: 63_000 }),
        ...time,
        report: {
          waiting: (w, d) => events.push(`wait ${w} ${d}`),
          recovered: (w, ms) => events.push(`recovered ${w} ${ms}`),
          gaveUp: () => events.push('gave up'),
        },
      },
    );
    expect(result).toBe('acked');
    expect(time.sleeps.reduce((s, n) => s + n, 0)).toBeGreaterThanOrEqual(200_000);
    expect(events.at(-1)).toBe(`recovered ${tries - 1} ${time.nowMs() - 1_000_000}`);
    expect(events.filter((e) => e.startsWith('wait'))).toHaveLength(tries - 1);
    expect(events).not.toContain('gave up');
  });

  test('an outage longer than the budget: the last failure is thrown once the budget is spent (one delivery spent)', async () => {
    const time = fakeTime();
    const events: string[] = [];
    const plan = rideOutPlanOf({ attemptMs: 63_000 });
    await expect(
      rideOutStoreOutage(
        async () => {
          time.advance(5_000); // each try waits out its store timeout
          throw outage();
        },
        { plan, ...time, report: { gaveUp: (w, ms) => events.push(`gave up ${w} ${ms}`) } },
      ),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
    const waited = time.nowMs() - 1_000_000;
    expect(waited).toBeLessThanOrEqual(plan.budgetMs + 5_000); // the last try started within the budget
    expect(waited).toBeGreaterThan(plan.budgetMs - 15_000 - 5_000);
    expect(events).toEqual([`gave up ${time.sleeps.length} ${waited}`]);
  });

  test('any other error is thrown at once: a bad request is not an outage', async () => {
    const time = fakeTime();
    await expect(
      rideOutStoreOutage(
        async () => {
          throw new StoreRequestError('400 bad request', 'claim', 400);
        },
        { plan: rideOutPlanOf({ attemptMs: 0 }), ...time },
      ),
    ).rejects.toBeInstanceOf(StoreRequestError);
    expect(time.sleeps).toEqual([]);
  });
});
