import { createHmac } from 'node:crypto';
import type { ChargeRecord } from './FakePaymentProvider';
import { runConcurrent } from '../bench/runConcurrent';

/** One webhook the fake provider sends, and whether it was signed correctly. */
export interface SentWebhook {
  readonly eventId: string;
  readonly paymentId: string;
  readonly version: number;
  readonly signature: 'good' | 'forged' | 'stale';
  readonly status: number;
}

export interface WebhookSenderOptions {
  /** The receiver, e.g. `http://127.0.0.1:<port>/api/webhooks/payment-provider`. */
  readonly url: string;
  readonly secret: string;
  readonly random: () => number;
  /** Share of charges that are refunded afterwards (a second event, version 2). Default 0.4. */
  readonly refundRate?: number;
  /** Extra copies of an event (redeliveries). Default 0.5 per event. */
  readonly duplicateRate?: number;
  /** Share of deliveries sent with a wrong or stale signature (in addition to the good ones). Default 0.1. */
  readonly badSignatureRate?: number;
  /** Deliveries in flight at once. Default 8. */
  readonly concurrency?: number;
}

/**
 * The fake provider's webhooks for its charges, as a real provider sends them: `charge.succeeded`
 * (version 1) for every charge and `charge.refunded` (version 2) for some, each signed
 * `Provider-Signature: t=<unix s>,v1=<HMAC-SHA256(secret, "<t>." + body)>` (computed here on its own,
 * not with the app's code), redelivered (duplicates), shuffled (a refund may arrive before its charge),
 * some forged (another secret) or stale (a timestamp 10 minutes old). A delivery answered 409 or 5xx
 * is retried, as providers do; 4xx other than 409 is final.
 */
export async function sendWebhooks(
  charges: readonly ChargeRecord[],
  options: WebhookSenderOptions,
): Promise<{ sent: SentWebhook[]; finalVersion: Map<string, number> }> {
  const events: Array<{ id: string; paymentId: string; version: number; body: Buffer }> = [];
  const finalVersion = new Map<string, number>();
  for (const charge of charges) {
    const refunded = options.random() < (options.refundRate ?? 0.4);
    for (const version of refunded ? [1, 2] : [1]) {
      const event = {
        id: `evt_${charge.chargeId}_${version}`,
        type: version === 1 ? 'charge.succeeded' : 'charge.refunded',
        created: Math.floor(Date.now() / 1000),
        data: {
          paymentId: charge.paymentId,
          chargeId: charge.chargeId,
          amount: charge.amount,
          currency: charge.currency,
          version,
          refundedAmount: version === 2 ? charge.amount : 0,
        },
      };
      events.push({ id: event.id, paymentId: charge.paymentId, version, body: Buffer.from(JSON.stringify(event)) });
    }
    finalVersion.set(charge.paymentId, refunded ? 2 : 1);
  }
  const deliveries: Array<{ event: (typeof events)[number]; signature: SentWebhook['signature'] }> = [];
  for (const event of events) {
    deliveries.push({ event, signature: 'good' });
    if (options.random() < (options.duplicateRate ?? 0.5)) deliveries.push({ event, signature: 'good' });
    if (options.random() < (options.badSignatureRate ?? 0.1)) deliveries.push({ event, signature: options.random() < 0.5 ? 'forged' : 'stale' });
  }
  for (let i = deliveries.length - 1; i > 0; i--) {
    const j = Math.floor(options.random() * (i + 1));
    [deliveries[i], deliveries[j]] = [deliveries[j], deliveries[i]];
  }
  const sent: SentWebhook[] = [];
  await runConcurrent(deliveries.length, options.concurrency ?? 8, async (i) => {
    const { event, signature } = deliveries[i];
    let status = 0;
    for (let attempt = 0; attempt < 20; attempt++) {
      const t = Math.floor(Date.now() / 1000) - (signature === 'stale' ? 600 : 0);
      const secret = signature === 'forged' ? `${options.secret}-forged` : options.secret;
      const v1 = createHmac('sha256', secret).update(`${t}.`).update(event.body).digest('hex');
      const response = await fetch(options.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'provider-signature': `t=${t},v1=${v1}` },
        body: event.body,
      });
      await response.arrayBuffer();
      status = response.status;
      if (status !== 409 && status < 500) break;
      await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
    }
    sent.push({ eventId: event.id, paymentId: event.paymentId, version: event.version, signature, status });
  });
  return { sent, finalVersion };
}
