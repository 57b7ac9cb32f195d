import type { Clock } from 'azure-functions-idempotency/internal';
import { FakePaymentProvider } from '../fakeProvider/FakePaymentProvider';

/** Where the effective charges of a run were counted. */
export type ChargeSource =
  /** The demo's own fake provider (its ledger of charges). */
  | 'fake-provider'
  /** An external provider's `GET /__stats` `charges` list. */
  | 'external-stats'
  /** The demo's own count of distinct succeeded charge ids (the external provider serves no usable /__stats). */
  | 'own-count';

/** A charge as a provider ledger lists it. */
export interface LedgerCharge {
  readonly paymentId: string;
  readonly amount: number;
}

/** The payment provider of a run: the demo's own fake, or the one `PAYMENT_PROVIDER_URL` names. */
export interface ProviderHandle {
  readonly url: string;
  readonly fake?: FakePaymentProvider;
  /** The provider's charges, when its ledger can be read; undefined otherwise. */
  charges(): Promise<{ source: ChargeSource; charges: LedgerCharge[] } | undefined>;
  stop(): Promise<void>;
}

/**
 * Starts the fake provider (faults at `faultRate` each: 5xx, timeout, charge-then-drop), or uses
 * `externalUrl`, which must be a loopback address (the demo sends nothing off this machine).
 * @throws Error when `externalUrl` is not loopback.
 */
export async function startProvider(options: {
  externalUrl?: string;
  faultRate: number;
  seed: number;
  /** The fake provider's memory of keys (default forever), on `clock`. */
  keyMemoryMs?: number;
  /** The fake provider's look-up (default `by-key`; `none`: 404, as Stripe). */
  lookup?: 'none' | 'by-key';
  clock?: Clock;
}): Promise<ProviderHandle> {
  if (options.externalUrl) {
    const url = options.externalUrl;
    assertLoopback(url);
    return { url, charges: () => readStats(url), stop: async () => undefined };
  }
  const rate = options.faultRate;
  const clock = options.clock;
  const fake = await FakePaymentProvider.start({
    faultRates: { error5xx: rate, timeout: rate, chargeThenDrop: rate },
    seed: options.seed,
    keyMemoryMs: options.keyMemoryMs,
    lookup: options.lookup,
    clock: clock ? () => clock.nowMs() : undefined,
  });
  return {
    url: fake.url,
    fake,
    charges: async () => ({ source: 'fake-provider', charges: fake.charges.map((c) => ({ paymentId: c.paymentId, amount: c.amount })) }),
    stop: () => fake.stop(),
  };
}

/** `GET {url}/__stats` -> its `charges` list, or undefined when it is not served or has none. */
async function readStats(url: string): Promise<{ source: ChargeSource; charges: LedgerCharge[] } | undefined> {
  try {
    const response = await fetch(new URL('__stats', url.endsWith('/') ? url : `${url}/`), { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) return undefined;
    const stats = (await response.json()) as { charges?: unknown };
    if (!Array.isArray(stats.charges)) return undefined;
    const charges = stats.charges
      .filter(
        (c): c is { paymentId: string; amount: unknown } => typeof c === 'object' && c !== null && typeof (c as { paymentId?: unknown }).paymentId === 'string',
      )
      .map((c) => ({ paymentId: c.paymentId, amount: Number(c.amount) }));
    return { source: 'external-stats', charges };
  } catch {
    return undefined;
  }
}

/** @throws Error unless the URL's host is a loopback address. */
export function assertLoopback(url: string): void {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    throw new Error(`PAYMENT_PROVIDER_URL ${JSON.stringify(url)} is not a URL`);
  }
  host = host.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)) return;
  throw new Error(`PAYMENT_PROVIDER_URL ${url} is not a loopback address; the demo only sends traffic to this machine`);
}
