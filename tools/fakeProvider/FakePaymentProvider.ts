import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { delay, mulberry32 } from './random';
/** The seeded PRNG, also imported from here by test/integration. */
export { mulberry32 } from './random';
import { json, readBody } from './httpBody';
import { serveCharges, type ChargeRecord } from './chargeList';
export type { ChargeRecord } from './chargeList';

/** A fault the provider can inject into one request. */
export type ProviderFault =
  /** Answer 503 without doing anything. */
  | 'error5xx'
  /** Hold the request and never answer (the client times out); nothing is charged. */
  | 'timeout'
  /** Charge, then drop the connection before answering. */
  | 'chargeThenDrop';

/** The faults a look-up can suffer (it charges nothing, so there is nothing to drop after). */
export type LookupFault = Exclude<ProviderFault, 'chargeThenDrop'>;

export interface FakeProviderOptions {
  /** Probability per request of each fault (0..1), drawn from a seeded generator. */
  readonly faultRates?: Partial<Record<ProviderFault, number>>;
  /** Added before every answer. */
  readonly latencyMs?: number;
  readonly seed?: number;
  readonly port?: number;
  /**
   * How long a key is remembered after its first use (default: forever). Real providers forget:
   * Stripe prunes keys after 24 hours; 0 charges on every call. Measured on `clock`.
   */
  readonly keyMemoryMs?: number;
  /** The provider's clock, epoch ms (default `Date.now`); the demo passes its jumping clock. */
  readonly clock?: () => number;
  /**
   * `by-key` (default): `GET /v1/charges?idempotency_key=K` lists the charges under K. `none`: it answers 404 (counted
   * in `lookups`), as Stripe, whose charges cannot be listed by idempotency key.
   */
  readonly lookup?: 'by-key' | 'none';
  /** `by-window` (default): `GET /v1/charges?created_gte=&created_lt=&limit=` lists charges by time (chargeList.ts); `none`: 404. */
  readonly list?: 'by-window' | 'none';
}

interface KeyEntry {
  readonly bodyHash: string;
  readonly amount: number;
  readonly firstUsedAtMs: number;
  state: 'inFlight' | 'done';
  status?: number;
  response?: unknown;
}

/**
 * A payment provider for tests and the demo, implementing the contract the app relies on like a
 * real one: `POST /v1/charges` with `Idempotency-Key`; 201 charged, 200 replay of a finished key,
 * 409 while the key is in flight, 422 when the key comes with another body, 402 declined
 * (customerId starting with `decline`), 400 malformed. `GET /v1/charges?idempotency_key=K` lists the
 * charges made under K, from the ledger (like a search by metadata: whatever the key memory), 200
 * `{ data: [...] }`, empty when none. It counts raw calls, look-ups and effective charges and injects
 * faults (a look-up: 5xx and timeouts only). `GET /__stats` serves the counters as JSON. Loopback only.
 */
export class FakePaymentProvider {
  rawCalls = 0;
  /** `GET /v1/charges?idempotency_key=` requests (faulted ones included). */
  lookups = 0;
  listRequests = 0; // GET /v1/charges?created_gte= (pages)
  readonly charges: ChargeRecord[] = [];
  /** Every Idempotency-Key seen per paymentId. */
  readonly keysByPayment = new Map<string, Set<string>>();
  /** Every `x-correlation-id` seen per paymentId. */
  readonly correlationIdsByPayment = new Map<string, Set<string>>();
  readonly faultsInjected: Record<ProviderFault, number> = { error5xx: 0, timeout: 0, chargeThenDrop: 0 };
  /** Keys met again after the provider had forgotten them (`keyMemoryMs`): each such call was treated as new. */
  forgottenKeysReused = 0;
  private readonly keys = new Map<string, KeyEntry>();
  private readonly queued: ProviderFault[] = [];
  private readonly queuedLookups: LookupFault[] = [];
  private readonly hanging = new Set<ServerResponse>();
  private random: () => number;
  private server: Server | undefined;
  private options: FakeProviderOptions;

  constructor(options: FakeProviderOptions = {}) {
    this.options = options;
    this.random = mulberry32(options.seed ?? 1);
  }

  /** Starts on 127.0.0.1 (a free port unless one is given); returns the base URL. */
  static async start(options: FakeProviderOptions = {}): Promise<FakePaymentProvider> {
    const provider = new FakePaymentProvider(options);
    await provider.listen(options.port ?? 0);
    return provider;
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | undefined;
    if (!address) throw new Error('fake provider is not listening');
    return `http://127.0.0.1:${address.port}`;
  }

  /** True when keys are forgotten after `keyMemoryMs` (a reused key can then be charged as a new payment). */
  get forgetsKeys(): boolean {
    return this.options.keyMemoryMs !== undefined && Number.isFinite(this.options.keyMemoryMs);
  }

  /** The amount of the first body kept under `key` (a faulted request keeps nothing; undefined: the key is unused). */
  firstAmountUnder(key: string): number | undefined {
    return this.keys.get(key)?.amount;
  }

  /** Effective charges: one per key that was charged (a replay is not a charge). */
  get effectiveCharges(): number {
    return this.charges.length;
  }

  /** Charges per paymentId (more than 1 would be a double charge). */
  chargesFor(paymentId: string): number {
    return this.charges.filter((c) => c.paymentId === paymentId).length;
  }

  /** Makes the next request(s) suffer these faults, in order. */
  injectNext(...faults: ProviderFault[]): void {
    this.queued.push(...faults);
  }

  /** Makes the next look-up(s) suffer these faults, in order (POST faults queued by `injectNext` are not used by look-ups). */
  injectNextLookup(...faults: LookupFault[]): void {
    this.queuedLookups.push(...faults);
  }

  setFaultRates(rates: Partial<Record<ProviderFault, number>>): void {
    this.options = { ...this.options, faultRates: rates };
  }

  setLatency(latencyMs: number): void {
    this.options = { ...this.options, latencyMs };
  }

  stats() {
    return {
      rawCalls: this.rawCalls,
      lookups: this.lookups,
      listRequests: this.listRequests,
      forgottenKeysReused: this.forgottenKeysReused,
      effectiveCharges: this.effectiveCharges,
      faultsInjected: { ...this.faultsInjected },
      paymentsWithSeveralKeys: [...this.keysByPayment.entries()].filter(([, keys]) => keys.size > 1).map(([id]) => id),
      doubleCharged: [...new Set(this.charges.map((c) => c.paymentId))].filter((id) => this.chargesFor(id) > 1),
      charges: this.charges,
    };
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    for (const response of this.hanging) response.destroy();
    this.hanging.clear();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async listen(port: number): Promise<void> {
    const server = createServer((req, res) => {
      this.route(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'GET' && req.url === '/__stats') return json(res, 200, this.stats());
    if (req.method === 'GET' && req.url?.startsWith('/v1/charges?')) return this.getCharges(req, res);
    if (req.method !== 'POST' || req.url !== '/v1/charges') return json(res, 404, { error: { message: 'not found' } });
    this.rawCalls++;
    const text = await readBody(req);
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') return json(res, 400, { error: { type: 'invalid_request_error', message: 'Idempotency-Key is required' } });
    let body: { paymentId?: unknown; customerId?: unknown; amount?: unknown; currency?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      return json(res, 400, { error: { type: 'invalid_request_error', message: 'body is not JSON' } });
    }
    const { paymentId, customerId, amount, currency } = body;
    if (
      typeof paymentId !== 'string' ||
      typeof customerId !== 'string' ||
      !Number.isInteger(amount) ||
      (amount as number) <= 0 ||
      typeof currency !== 'string'
    ) {
      return json(res, 400, { error: { type: 'invalid_request_error', message: 'paymentId, customerId, amount (integer > 0) and currency are required' } });
    }
    let keys = this.keysByPayment.get(paymentId);
    if (!keys) this.keysByPayment.set(paymentId, (keys = new Set()));
    keys.add(key);
    const correlationId = req.headers['x-correlation-id'];
    if (typeof correlationId === 'string') {
      let ids = this.correlationIdsByPayment.get(paymentId);
      if (!ids) this.correlationIdsByPayment.set(paymentId, (ids = new Set()));
      ids.add(correlationId);
    }
    const fault = this.nextFault();
    if (this.options.latencyMs) await delay(this.options.latencyMs);
    if (this.answeredWithFault(res, fault)) return;

    const bodyHash = createHash('sha256')
      .update(JSON.stringify([paymentId, customerId, amount, currency]))
      .digest('hex');
    const now = (this.options.clock ?? Date.now)();
    let existing = this.keys.get(key);
    if (existing && existing.state === 'done' && now - existing.firstUsedAtMs >= (this.options.keyMemoryMs ?? Number.POSITIVE_INFINITY)) {
      this.keys.delete(key);
      this.forgottenKeysReused++;
      existing = undefined;
    }
    if (existing) {
      if (existing.bodyHash !== bodyHash) return json(res, 422, { error: { type: 'idempotency_error', message: 'Idempotency-Key used with another body' } });
      if (existing.state === 'inFlight') return json(res, 409, { error: { message: 'a request with this Idempotency-Key is in flight' } });
      return json(res, existing.status === 201 ? 200 : existing.status!, existing.response);
    }
    const entry: KeyEntry = { bodyHash, amount: Number(amount), firstUsedAtMs: now, state: 'inFlight' };
    this.keys.set(key, entry);
    await delay(0);
    if (customerId.startsWith('decline')) {
      Object.assign(entry, { state: 'done', status: 402, response: { error: { code: 'card_declined', message: 'card declined' }, reason: 'card_declined' } });
      return json(res, 402, entry.response);
    }
    const charge: ChargeRecord = {
      chargeId: `ch_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      paymentId,
      idempotencyKey: key,
      amount: amount as number,
      currency,
      createdMs: now,
    };
    this.charges.push(charge);
    Object.assign(entry, { state: 'done', status: 201, response: { id: charge.chargeId, paymentId, amount, currency, status: 'succeeded' } });
    if (fault === 'chargeThenDrop') {
      req.socket.destroy();
      return;
    }
    return json(res, 201, entry.response);
  }

  /** `GET /v1/charges?...`: the look-up by key or the list by window (chargeList.ts), faults as a look-up's, no charge. */
  private getCharges(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const offered = { lookup: this.options.lookup !== 'none', list: this.options.list !== 'none' };
    const count = (kind: 'lookup' | 'list') => (kind === 'lookup' ? this.lookups++ : this.listRequests++);
    const nextFault = () => this.queuedLookups.shift() ?? this.drawFault(['error5xx', 'timeout'] as const);
    const answered = (response: ServerResponse, fault: LookupFault | undefined) => this.answeredWithFault(response, fault);
    const { charges, faultsInjected: faults } = this;
    return serveCharges(req, res, { charges, offered, latencyMs: this.options.latencyMs, count, nextFault, faults, answered });
  }

  /** Answers an injected 5xx (503) or timeout (the request is left hanging until it closes); false for no such fault. */
  private answeredWithFault(res: ServerResponse, fault: ProviderFault | undefined): boolean {
    if (fault === 'error5xx') {
      json(res, 503, { error: { message: 'injected outage' } });
      return true;
    }
    if (fault === 'timeout') {
      this.hanging.add(res);
      res.on('close', () => this.hanging.delete(res));
      return true;
    }
    return false;
  }

  private drawFault<F extends ProviderFault>(kinds: readonly F[]): F | undefined {
    return kinds.find((kind) => {
      const rate = this.options.faultRates?.[kind] ?? 0;
      return rate > 0 && this.random() < rate;
    });
  }

  private nextFault(): ProviderFault | undefined {
    const queued = this.queued.shift();
    const fault = queued ?? this.drawFault(['error5xx', 'timeout', 'chargeThenDrop'] as const);
    if (fault) this.faultsInjected[fault]++;
    return fault;
  }
}
