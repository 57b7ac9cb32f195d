import type { PaymentRequested } from '../../src/payments/schema';
import type { SimApp } from './app';
import type { Random } from './random';
import type { World } from './world';

/** Share of payments whose id a producer reuses for another payment later. */
const REUSE_SHARE = 0.2;

/**
 * Producers in the world (issue 62 item 5): a producer reuses a payment id for **another payment** (another customer;
 * half of the time another amount too, else the same: a fixed price) at a time drawn log-uniformly from a minute to the end of the
 * faults' settling (before and after the record's expiry, inside and past the provider's key memory: 6 h, 24 h, 7 d).
 * By the app's contract a payment id names one payment; what the invariants ask is that the second payment is never
 * told it was paid by the first one's charge, never charged twice, and that the first payment's record says the truth.
 */
export function planProducer(app: SimApp, world: World, random: Random, payments: readonly string[], untilMs: number): void {
  for (const paymentId of payments) {
    const reuse = random.chance(REUSE_SHARE);
    const atMs = world.startMs + random.logBetween(60_000, untilMs - world.startMs);
    const otherAmount = 100 * random.int(51, 99);
    // Half of the reuses keep the amount (a fixed price): only the customer tells the two payments apart.
    const sameAmount = random.chance(0.5);
    if (!reuse) continue;
    const first = app.steps.sent.get(paymentId)?.[0];
    if (!first) continue;
    const amount = sameAmount ? first.amount : otherAmount;
    const body: PaymentRequested = { paymentId, customerId: `${first.customerId}-reused`, amount, currency: first.currency };
    world.at(atMs, () => {
      world.log(`producer: payment id ${paymentId} reused for another payment (${body.customerId}, ${amount})`);
      app.steps.reuse(paymentId, body, world.nowMs());
      void app.bus.send(paymentId, body);
    });
  }
}
