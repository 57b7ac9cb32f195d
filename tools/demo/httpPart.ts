import { AzuriteTable } from '../azurite/AzuriteTable';
import { FakePaymentProvider } from '../fakeProvider/FakePaymentProvider';
import { mulberry32 } from '../fakeProvider/random';
import { sendWebhooks } from '../fakeProvider/WebhookSender';
import { RecordingPaymentQueue, startHttpRig } from '../local/httpRig';

/** What the demo's HTTP part saw, and whether its invariants held. */
export interface HttpPartReport {
  readonly requests: number;
  readonly accepted: number;
  readonly replayed: number;
  readonly conflicts409: number;
  readonly reused422: number;
  readonly clientTimeouts: number;
  readonly messagesEnqueued: number;
  readonly webhooksSent: number;
  readonly badSignaturesSent: number;
  readonly badSignaturesRefused: number;
  readonly paymentRows: number;
  readonly failures: string[];
  readonly ok: boolean;
}

const CALLERS = { alice: 'demo-key-alice-000000001', bob: 'demo-key-bob-0000000002' } as const;
type Caller = keyof typeof CALLERS;

/**
 * The demo's HTTP part: the real `POST /api/payments` and webhook handlers over loopback HTTP, on their own Azurite.
 * Two callers send payments with the same Idempotency-Key values (timeouts and retries, races, reused keys); the fake
 * provider then sends its webhooks (duplicates, shuffled, some forged or stale). Invariants: one message per key and
 * caller, byte-identical replays, no caller gets another's answer, 422 for a reused key, bad signatures refused,
 * every Payment row at its newest event.
 */
export async function runHttpPart(options: { seed: number }): Promise<HttpPartReport> {
  const random = mulberry32(options.seed ^ 0x4777);
  const azurite = await AzuriteTable.start();
  const queue = new RecordingPaymentQueue();
  const secret = `whsec_demo_${options.seed}_0123456789`;
  const rig = await startHttpRig({
    tableConnectionString: azurite.connectionString,
    functionKeys: CALLERS,
    queue,
    leaseMs: 1_000,
    settings: { WEBHOOK_SIGNING_SECRET: secret },
  });
  const provider = await FakePaymentProvider.start({ seed: options.seed });
  const failures: string[] = [];
  const counts = { requests: 0, accepted: 0, replayed: 0, conflicts409: 0, reused422: 0, clientTimeouts: 0 };
  try {
    const answers = new Map<string, Buffer[]>(); // caller|key -> every 202 body
    const own = new Map<string, string>(); // caller|key -> its own paymentId
    const post = async (caller: Caller, key: string, body: object, timeoutMs = 5_000) => {
      counts.requests++;
      try {
        const response = await fetch(`${rig.url}/api/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-functions-key': CALLERS[caller], 'idempotency-key': key },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        });
        const bytes = Buffer.from(await response.arrayBuffer());
        if (response.status === 202) {
          counts[response.headers.get('idempotent-replayed') === 'true' ? 'replayed' : 'accepted']++;
          answers.set(`${caller}|${key}`, [...(answers.get(`${caller}|${key}`) ?? []), bytes]);
        } else if (response.status === 409) counts.conflicts409++;
        else if (response.status === 422) counts.reused422++;
        return response.status;
      } catch {
        counts.clientTimeouts++;
        return 0;
      }
    };
    const until202 = async (caller: Caller, key: string, body: object, firstTimeoutMs: number) => {
      for (let attempt = 0; attempt < 50; attempt++) {
        if ((await post(caller, key, body, attempt === 0 ? firstTimeoutMs : 5_000)) === 202) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      failures.push(`${caller} ${key}: never accepted`);
    };

    const total = 24;
    for (let i = 0; i < total; i++) {
      const caller: Caller = i % 2 === 0 ? 'alice' : 'bob';
      // Both callers use the same key values (k-0, k-1, ...) for their own, different payments.
      const key = `k-${Math.floor(i / 2)}`;
      const body = { paymentId: `http-${options.seed}-${caller}-${i}`, customerId: `c-${i}`, amount: 100 + i, currency: 'EUR' };
      own.set(`${caller}|${key}`, body.paymentId);
      const scenario = random();
      if (scenario < 0.3) {
        queue.delayMs = 400; // a slow broker: the first attempt times out on the client, the retries find it in flight, then replay
        await until202(caller, key, body, 100);
        queue.delayMs = 0;
      } else if (scenario < 0.6) {
        queue.delayMs = 100;
        await Promise.all(Array.from({ length: 5 }, () => post(caller, key, body)));
        queue.delayMs = 0;
        await until202(caller, key, body, 5_000);
      } else await until202(caller, key, body, 5_000);
      if (random() < 0.3 && (await post(caller, key, { ...body, amount: body.amount + 1 })) !== 422)
        failures.push(`${caller} ${key}: reused key not refused with 422`);
      await post(caller, key, body); // a late duplicate: the replay
    }

    // Invariants of the API.
    const perMessage = new Map<string, number>();
    for (const m of queue.sent) perMessage.set(m.messageId, (perMessage.get(m.messageId) ?? 0) + 1);
    for (const [ck, paymentId] of own) {
      if (perMessage.get(paymentId) !== 1) failures.push(`${ck}: ${perMessage.get(paymentId) ?? 0} messages, expected 1`);
      const bodies = answers.get(ck) ?? [];
      if (bodies.length === 0) failures.push(`${ck}: no 202`);
      if (bodies.some((b) => !b.equals(bodies[0]))) failures.push(`${ck}: replays differ from the first answer`);
      if (bodies.some((b) => (JSON.parse(b.toString()) as { paymentId: string }).paymentId !== paymentId))
        failures.push(`${ck}: answered with another caller's payment`);
    }
    if (queue.sent.length !== own.size) failures.push(`${queue.sent.length} messages for ${own.size} keys and callers`);

    // The provider charges the accepted payments and sends its webhooks.
    for (const m of queue.sent) {
      const response = await fetch(`${provider.url}/v1/charges`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': m.messageId },
        body: JSON.stringify(m.body),
      });
      await response.arrayBuffer();
    }
    const { sent, finalVersion } = await sendWebhooks(provider.charges, { url: `${rig.url}/api/webhooks/payment-provider`, secret, random });
    const bad = sent.filter((s) => s.signature !== 'good');
    const refused = bad.filter((s) => s.status === 400 || s.status === 403);
    if (refused.length !== bad.length) failures.push(`${bad.length - refused.length} badly signed webhooks were not refused`);
    for (const s of sent.filter((x) => x.signature === 'good' && x.status !== 200)) failures.push(`webhook ${s.eventId}: answered ${s.status}`);
    let rows = 0;
    for (const [paymentId, version] of finalVersion) {
      const row = await rig.paymentState.get(paymentId);
      if (row) rows++;
      if (row?.version !== version) failures.push(`Payment row ${paymentId}: version ${row?.version ?? 'none'}, newest event ${version}`);
    }
    return {
      ...counts,
      messagesEnqueued: queue.sent.length,
      webhooksSent: sent.length,
      badSignaturesSent: bad.length,
      badSignaturesRefused: refused.length,
      paymentRows: rows,
      failures,
      ok: failures.length === 0,
    };
  } finally {
    await rig.stop();
    await provider.stop();
    await azurite.stop();
  }
}

/** The HTTP part's lines for the demo's report. */
export function formatHttpPart(r: HttpPartReport): string {
  return [
    'HTTP part (POST /api/payments with Idempotency-Key, provider webhooks, over loopback HTTP)',
    `  requests ${r.requests}: accepted ${r.accepted} (first answers read; a timed-out client reads its first answer as a replay), replayed ${r.replayed}, 409 in flight ${r.conflicts409}, 422 reused key ${r.reused422}, client timeouts ${r.clientTimeouts}`,
    `  messages enqueued ${r.messagesEnqueued} (one per key and caller)`,
    `  webhooks sent ${r.webhooksSent} (badly signed ${r.badSignaturesSent}, refused ${r.badSignaturesRefused}); Payment rows at their newest event: ${r.paymentRows}`,
    `  invariants: ${r.ok ? 'all held' : `FAILED: ${r.failures.slice(0, 5).join('; ')}`}`,
  ].join('\n');
}
