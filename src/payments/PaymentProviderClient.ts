import type { ChargeResult, PaymentRequested } from './schema';
import {
  ChargeInFlightError,
  ChargeListUnsupportedError,
  LOOKUP_UNSUPPORTED,
  LookupUnsupportedError,
  ProviderRefusedError,
  TransientProviderError,
} from './providerErrors';

export { ChargeInFlightError, ChargeListUnsupportedError, LookupUnsupportedError, ProviderRefusedError, TransientProviderError } from './providerErrors';

/**
 * The seam of a look-up: the charge made under a key, if any. `by-key` is {@link PaymentProviderClient.findCharge}.
 * A provider whose look-up is a search (Stripe: `GET /v1/charges/search?query=metadata['idempotency_key']:'K'`,
 * with the key also sent as metadata on the charge) implements this too; its index lags (Stripe: up to a minute),
 * so its "none" is final only for a call made longer ago than that lag: such an implementation waits out the lag
 * (or throws TransientProviderError to be retried by the run's timers) before answering undefined.
 */
export interface ChargeLookup {
  /**
   * @throws TransientProviderError (retried by the run), LookupUnsupportedError (held, reported).
   */
  findCharge(idempotencyKey: string, correlationId?: string, chargesFromMs?: number): Promise<ChargeResult | undefined>;
}

export interface PaymentProviderOptions {
  /** Base URL from the `PAYMENT_PROVIDER_URL` setting. */
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** Told each call's latency (for the `payments.provider.latency` metric). */
  readonly onLatency?: (ms: number, statusCode: number | undefined) => void;
  /** Told each answer that is not the provider's word ({@link ProviderRefusedError}: the `payments.provider.refused` metric). */
  readonly onRefused?: (statusCode: number) => void;
  readonly fetch?: typeof fetch;
}

/**
 * The third-party payment provider, known only through its HTTP contract:
 * `POST {base}/v1/charges` with `Idempotency-Key`; 201/200 charged (200 = replay of the key);
 * 409 in flight; 422 with the provider's idempotency error, key used with another body; 402 declined; 400 with the
 * provider's error body, rejected; 5xx and timeouts transient; any other 4xx is not the provider's word
 * ({@link ProviderRefusedError}).
 * `GET {base}/v1/charges?idempotency_key=K` lists the charges made under K (`{ data: [...] }`; Stripe: a search by metadata).
 */
export class PaymentProviderClient implements ChargeLookup {
  constructor(private readonly options: PaymentProviderOptions) {}

  /** How long one request may take before the client gives up (`PAYMENT_PROVIDER_TIMEOUT_MS`). */
  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  /**
   * Charges once per `idempotencyKey`: calling again with the same key and body returns the
   * first charge. Declines and rejections are results; transient failures throw. The message's
   * correlation id, when there is one, goes along as `x-correlation-id`.
   * @throws TransientProviderError
   */
  async charge(payment: PaymentRequested, idempotencyKey: string, correlationId?: string, chargesFromMs?: number): Promise<ChargeResult> {
    // A replay may answer the key's charge as it is now (PayPal, Braintree), for another amount, or made before this
    // payment's record (the id reused after its record expired, the key still remembered): never this payment's charge.
    const ofThisPayment = (status: number, text: string) => sameBody(interpret(status, text), payment, createdOf(text), chargesFromMs);
    return this.request(this.url('v1/charges'), ofThisPayment, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
        ...(correlationId ? { 'x-correlation-id': correlationId } : {}),
      },
      body: JSON.stringify({ paymentId: payment.paymentId, customerId: payment.customerId, amount: payment.amount, currency: payment.currency }),
    });
  }

  /**
   * The succeeded charge made under `idempotencyKey`, if any: asked before calling `charge` again when an earlier
   * call may have charged (a provider that forgot the key would charge twice). Independent of the provider's key memory.
   * @throws TransientProviderError as `charge` does (5xx, timeouts, network; also an answer it cannot read);
   *   LookupUnsupportedError on 400, 404, 405, 501 (the provider has no such look-up: a configuration problem).
   */
  async findCharge(idempotencyKey: string, correlationId?: string, chargesFromMs?: number): Promise<ChargeResult | undefined> {
    const url = this.url('v1/charges');
    url.searchParams.set('idempotency_key', idempotencyKey);
    return this.request(url, (status, text) => interpretLookup(status, text, chargesFromMs), {
      method: 'GET',
      headers: correlationId ? { 'x-correlation-id': correlationId } : {},
    });
  }

  private url(path: string): URL {
    return new URL(path, this.options.baseUrl.endsWith('/') ? this.options.baseUrl : `${this.options.baseUrl}/`);
  }

  /** One request within the timeout; `read` interprets the answer; anything else is a TransientProviderError. */
  private async request<T>(url: URL, read: (status: number, text: string) => T, init: RequestInit): Promise<T> {
    const started = performance.now();
    let status: number | undefined;
    try {
      const response = await (this.options.fetch ?? fetch)(url, { ...init, signal: AbortSignal.timeout(this.options.timeoutMs) });
      status = response.status;
      const text = await response.text();
      return read(status, text);
    } catch (error) {
      if (error instanceof ProviderRefusedError) this.options.onRefused?.(error.statusCode ?? 0);
      if (error instanceof TransientProviderError || error instanceof LookupUnsupportedError || error instanceof ChargeListUnsupportedError) throw error;
      const name = (error as Error)?.name;
      const what =
        name === 'TimeoutError' || name === 'AbortError' ? `no answer within ${this.options.timeoutMs} ms` : `request failed (${(error as Error)?.message})`;
      throw new TransientProviderError(`payment provider: ${what}`, status, { cause: error });
    } finally {
      this.options.onLatency?.(performance.now() - started, status);
    }
  }

  /**
   * One page of the provider's charges created in `[window.fromMs, window.toMs)` (epoch ms), ascending by (created, id):
   * `GET {base}/v1/charges?created_gte=&created_lt=&limit=[&starting_after=]` (Stripe's list, not its search: no index
   * lag). `nextCursor` is set while the provider says it has more (`has_more`), even when this page is empty (then it is
   * the cursor sent, `''` for the window's start): a caller goes on until it is absent. `limit` 1-100 (default 100).
   * @throws TransientProviderError (5xx, 408, 429, timeouts, network, an answer it cannot read: the tick fails, the next
   *   resumes from its checkpoint); ChargeListUnsupportedError on 404, 405, 501 (the provider offers no list).
   */
  async listCharges(window: { fromMs: number; toMs: number }, cursor?: string, limit = 100): Promise<ChargeListPage> {
    const url = this.url('v1/charges');
    url.searchParams.set('created_gte', String(Math.trunc(window.fromMs)));
    url.searchParams.set('created_lt', String(Math.trunc(window.toMs)));
    url.searchParams.set('limit', String(Math.min(100, Math.max(1, Math.trunc(limit)))));
    if (cursor) url.searchParams.set('starting_after', cursor);
    return this.request(url, (status, text) => interpretList(status, text, cursor ?? ''), { method: 'GET' });
  }
}

function interpret(status: number, text: string): ChargeResult {
  if (status === 200 || status === 201) {
    let body: { id?: unknown; amount?: unknown; currency?: unknown; status?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new TransientProviderError(`payment provider answered ${status} with a body that is not JSON`, status);
    }
    if (typeof body.id === 'string' && PENDING_STATUSES.has(String(body.status))) throw new ChargeInFlightError(body.id, status);
    if (typeof body.id !== 'string' || body.status !== 'succeeded') {
      throw new TransientProviderError(`payment provider answered ${status} without a succeeded charge id`, status);
    }
    return { status: 'succeeded', chargeId: body.id, amount: Number(body.amount), currency: String(body.currency) };
  }
  if (status === 402) return { status: 'declined', reason: reasonFrom(text, 'declined') };
  if (status === 409) throw new TransientProviderError('payment provider: a request with this key is still in flight (409)', status);
  if (status === 408 || status >= 500) throw new TransientProviderError(`payment provider answered ${status}`, status);
  const error = providerError(text);
  if (status === 422 && error?.type === 'idempotency_error')
    return { status: 'rejected', reason: `idempotency key used before with a different body (422)`, code: 'idempotency-key-reused' };
  if (status === 400 && error?.type !== undefined)
    return { status: 'rejected', reason: `payment provider answered 400 (${error.type}: ${error.message ?? ''})`.slice(0, 200) };
  throw new ProviderRefusedError(status, error === undefined ? "without the provider's error body" : `error ${error.type ?? 'of no type'}`);
}

/** A success for another amount or currency is the key's charge for another payment: answered as a key reused (no charge). */
function sameBody(result: ChargeResult, payment: PaymentRequested, createdMs?: number, chargesFromMs?: number): ChargeResult {
  const before = createdMs !== undefined && chargesFromMs !== undefined && createdMs < chargesFromMs;
  if (result.status !== 'succeeded' || (!before && result.amount === payment.amount && result.currency === payment.currency)) return result;
  return {
    status: 'rejected',
    reason: `idempotency key used before with a different body (the provider answered its charge ${result.chargeId})`,
    code: 'idempotency-key-reused',
  };
}

/** The `created` (epoch ms) of a charge answer, when the provider stamps one. */
function createdOf(text: string): number | undefined {
  try {
    const created = (JSON.parse(text) as { created?: unknown }).created;
    return typeof created === 'number' ? created : undefined;
  } catch {
    return undefined;
  }
}

/** Charge statuses that are not final (Stripe `processing`, Adyen `Received`/`pending`, PayPal `PENDING`): in flight. */
const PENDING_STATUSES = new Set(['pending', 'processing', 'received', 'PENDING', 'Received']);

/** The provider's own error body (`{ error: { type, message } }`, Stripe's shape), or undefined when the answer has none. */
function providerError(text: string): { type?: string; message?: string } | undefined {
  try {
    const body = JSON.parse(text) as { error?: { type?: unknown; message?: unknown } };
    if (typeof body !== 'object' || body === null || typeof body.error !== 'object' || body.error === null) return undefined;
    const { type, message } = body.error;
    if (typeof type !== 'string') return undefined;
    return { type, message: typeof message === 'string' ? message.slice(0, 120) : undefined };
  } catch {
    return undefined;
  }
}

/** A look-up's answer: the first succeeded charge listed, undefined for none; "no such look-up" is unsupported; other statuses transient. */
function interpretLookup(status: number, text: string, chargesFromMs?: number): ChargeResult | undefined {
  if (LOOKUP_UNSUPPORTED.has(status)) throw new LookupUnsupportedError(status);
  if (status !== 200) throw new TransientProviderError(`payment provider answered ${status} to a charge look-up`, status);
  let body: { data?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new TransientProviderError('payment provider answered a charge look-up with a body that is not JSON', status);
  }
  if (!Array.isArray(body.data)) throw new TransientProviderError('payment provider answered a charge look-up without a data list', status);
  // A charge made before this payment's record (`chargesFromMs`) is another payment's under a reused key: not listed here.
  const listed = (body.data as Array<{ id?: unknown; amount?: unknown; currency?: unknown; status?: unknown; created?: unknown }>).filter(
    (c) =>
      typeof c === 'object' &&
      c !== null &&
      typeof c.id === 'string' &&
      !(chargesFromMs !== undefined && typeof c.created === 'number' && c.created < chargesFromMs),
  );
  const found = listed.find((c) => c.status === 'succeeded');
  // A charge still processing is a call in flight: "none" only when every charge listed under the key is final.
  const pending = listed.find((c) => PENDING_STATUSES.has(String(c.status)));
  if (!found && pending) throw new ChargeInFlightError(String(pending.id), status);
  return found ? { status: 'succeeded', chargeId: String(found.id), amount: Number(found.amount), currency: String(found.currency) } : undefined;
}

function reasonFrom(text: string, fallback: string): string {
  try {
    const body = JSON.parse(text) as { reason?: unknown; error?: { message?: unknown } };
    const reason = body.reason ?? body.error?.message;
    return typeof reason === 'string' && reason ? reason.slice(0, 200) : fallback;
  } catch {
    return fallback;
  }
}

/** A charge as the provider's list shows it: its id, status, amount, the `Idempotency-Key` it was made under, when (epoch ms). */
export interface ListedCharge {
  readonly id: string;
  /** `pending`: still being processed (it may yet succeed or fail); `failed`: no money taken. */
  readonly status: 'succeeded' | 'pending' | 'failed';
  readonly amount: number;
  readonly currency: string;
  /** The key the charge was made under; undefined for a charge made without one (not by this app). */
  readonly idempotencyKey: string | undefined;
  readonly createdMs: number;
}

/** One page of the list; `nextCursor` (the last listed id; on an empty page the cursor sent, `''` for none) while the provider has more. */
export interface ChargeListPage {
  readonly charges: ListedCharge[];
  readonly nextCursor?: string;
}

const LIST_UNSUPPORTED = new Set([404, 405, 501]);
const LISTED_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'pending', 'failed']);

/** A list answer: `{ data: [...], has_more }`; an entry without an id, a known status or a numeric `created` is unreadable (transient). */
function interpretList(status: number, text: string, sentCursor: string): ChargeListPage {
  if (LIST_UNSUPPORTED.has(status)) throw new ChargeListUnsupportedError(status);
  if (status !== 200) throw new TransientProviderError(`payment provider answered ${status} to the charge list`, status);
  let body: { data?: unknown; has_more?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new TransientProviderError('payment provider answered the charge list with a body that is not JSON', status);
  }
  if (!Array.isArray(body.data)) throw new TransientProviderError('payment provider answered the charge list without a data list', status);
  const charges = (body.data as unknown[]).map((entry): ListedCharge => {
    const c = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    if (typeof c.id !== 'string' || c.id === '' || typeof c.status !== 'string' || !LISTED_STATUSES.has(c.status) || !Number.isFinite(Number(c.created)))
      throw new TransientProviderError('payment provider listed a charge without an id, a known status or a created time', status);
    const key = c.idempotency_key;
    return {
      id: c.id,
      status: c.status as ListedCharge['status'],
      amount: Number(c.amount),
      currency: String(c.currency),
      idempotencyKey: typeof key === 'string' && key !== '' ? key : undefined,
      createdMs: Number(c.created),
    };
  });
  // An empty page that says it has more: ask again from where this one started (the walk is bounded per tick).
  return body.has_more === true ? { charges, nextCursor: charges[charges.length - 1]?.id ?? sentCursor } : { charges };
}
