import type { ChargeResult, PaymentRequested } from '../../src/payments/schema';
import type { Random } from './random';
import type { World } from './world';

/** The provider's faults this schedule (rates per call). */
export interface ProviderFaults {
  error5xx: number;
  error5xxAfter: number;
  lostAnswer: number;
  /** A window in which every call answers 503 (an outage), or none. */
  outage?: { readonly fromMs: number; readonly toMs: number };
  /** How long a charge stays invisible to a look-up (a search index's lag); 0: at once. */
  readonly lookupLagMs: number;
}

/** One key as the provider remembers it: the first response it gave, replayed to every later call with the key. */
interface KeyMemory {
  firstCallMs: number;
  inFlight: boolean;
  /** The saved response (Stripe saves the first one "including 500 errors"). */
  status: number;
  body: unknown;
  /** The charge's body, to answer a reuse of the key with another body (422). */
  amount: number;
  currency: string;
}

/** A charge the provider made (its ledger: never forgotten, unlike the keys). */
export interface LedgerCharge {
  readonly key: string;
  readonly paymentId: string;
  readonly chargeId: string;
  readonly atMs: number;
  /** When the call that made it reached the provider (a charge in flight is made later). */
  readonly calledAtMs: number;
  readonly amount: number;
  readonly currency: string;
}

/** One provider call as the invariants see it. */
export interface ProviderCall {
  readonly key: string;
  readonly atMs: number;
  readonly kind: 'charge' | 'lookup';
  /** A charge call: whether the same activity looked the key up first. */
  readonly lookedUp?: boolean;
  /** A charge call: when the provider first took in a call with this key (that may have charged), if before this one. */
  readonly keyFirstSeenMs?: number;
  /** The provider's final answer to a charge call that was delivered (no fault): its status. */
  answered?: ChargeResult['status'];
  /** The HTTP status the provider answered with (undefined: no answer reached the caller). */
  httpStatus?: number;
}

/** A fault that reaches the caller as no HTTP answer at all. */
type NoAnswer = 'connection-lost' | 'timeout';

/** What the simulated server answers one request with. */
type HttpAnswer = { readonly status: number; readonly body: unknown } | NoAnswer;

/** The provider's base URL in the simulation (never resolved: `fetch` below answers it in process). */
export const SIM_PROVIDER_URL = 'http://provider.sim.invalid/';

/**
 * The payment provider as an HTTP server, Stripe's contract: `POST /v1/charges` with `Idempotency-Key` charges once a
 * key; the first response for a key is saved and replayed to every later call with it ("including 500 errors",
 * Stripe's idempotent requests page) for `keyMemoryMs` after its first call (then forgotten: a call with it charges
 * again); a call with a key in flight answers 409, a key reused with another body 422; declines answer 402 for
 * customers whose id starts with `decline`. `lookup: 'by-key'` answers `GET /v1/charges?idempotency_key=K` with the
 * charges made under K (after the lag); `none` answers 404. The app's own `PaymentProviderClient` reads these answers
 * (statuses, bodies, a lost connection, a timeout) through {@link SimProvider.session}'s `fetch`: its classification
 * is what the invariants judge.
 */
export class SimProvider {
  private readonly keys = new Map<string, KeyMemory>();
  readonly ledger: LedgerCharge[] = [];
  readonly calls: ProviderCall[] = [];
  private chargeSeq = 0;
  /** A scenario's forced fault: the next `n` charges are made and their answers lost. */
  forceLostAnswers = 0;
  /**
   * A script's faults for the next charge calls, in order (the fake provider's `injectNext`): `error5xx` answers 503,
   * `timeout` never answers (the client gives up; nothing charged), `chargeThenDrop` charges and loses the answer.
   */
  readonly forceNext: Array<'error5xx' | 'timeout' | 'chargeThenDrop'> = [];
  /** A scenario's hook: told when a charge is made (before its answer). */
  afterCharge?: () => void;
  /** A script's hook: awaited before a charge call's answer goes back (the script does something while the caller waits). */
  holdAnswer?: (call: ProviderCall) => Promise<void>;
  /** When each key was first taken in (kept after the key is forgotten: the invariants' view, not the provider's). */
  private readonly firstSeenMs = new Map<string, number>();

  constructor(
    private readonly world: World,
    private readonly random: Random,
    private readonly faults: ProviderFaults,
    readonly lookup: 'none' | 'by-key',
    readonly keyMemoryMs: number,
    /** The app's provider client gives up after this long (`PAYMENT_PROVIDER_TIMEOUT_MS`). */
    private readonly clientTimeoutMs = 10_000,
  ) {}

  setOutage(window: { fromMs: number; toMs: number }): void {
    this.faults.outage = window;
  }

  /** No more faults (the schedule's quiet phase; the look-up's lag stays: it is how the provider is). */
  quiet(): void {
    Object.assign(this.faults, { error5xx: 0, error5xxAfter: 0, lostAnswer: 0, outage: undefined });
  }

  /**
   * The provider as one activity execution reaches it: a `fetch` for the app's `PaymentProviderClient` (the invariants
   * need to know whether that activity looked up first).
   */
  session(): { fetch: typeof fetch } {
    let lookedUp = false;
    const fetchOf = async (url: string | URL, init?: RequestInit): Promise<Response> => {
      const target = new URL(url);
      const headers = new Headers(init?.headers);
      let answer: HttpAnswer;
      if ((init?.method ?? 'GET') === 'GET' && target.pathname === '/v1/charges') {
        lookedUp = true;
        answer = await this.lookUp(target.searchParams.get('idempotency_key') ?? '');
      } else if (init?.method === 'POST' && target.pathname === '/v1/charges') {
        const payment = JSON.parse(init.body as string) as PaymentRequested;
        answer = await this.charge(payment, headers.get('idempotency-key') ?? '', lookedUp);
      } else answer = { status: 404, body: { error: { message: 'not found' } } };
      if (answer === 'connection-lost') throw new TypeError('fetch failed', { cause: new Error('socket hang up (simulated: the connection dropped)') });
      if (answer === 'timeout') throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'content-type': 'application/json' } });
    };
    // The client passes a URL and a string body: the only shapes this server reads.
    return { fetch: fetchOf as unknown as typeof fetch };
  }

  private forget(key: string): KeyMemory | undefined {
    const memory = this.keys.get(key);
    if (memory && !memory.inFlight && this.world.nowMs() - memory.firstCallMs > this.keyMemoryMs) this.keys.delete(key);
    return this.keys.get(key);
  }

  /** `POST /v1/charges`: what the server answers (or that no answer reaches the caller). */
  private async charge(payment: PaymentRequested, key: string, lookedUp: boolean): Promise<HttpAnswer> {
    await this.world.sleep(this.random.logBetween(20, 800));
    const call: ProviderCall = { key, atMs: this.world.nowMs(), kind: 'charge', lookedUp, keyFirstSeenMs: this.firstSeenMs.get(key) };
    this.calls.push(call);
    const answered = (status: number, body: unknown): HttpAnswer => {
      call.httpStatus = status;
      this.world.log(`provider: charge ${key} -> ${status}${status === 500 ? " (the key's saved response)" : ''}`);
      return { status, body };
    };
    const unavailable = (why: string) => answered(503, { error: { type: 'api_error', message: why } });
    const outage = this.faults.outage;
    if (outage && call.atMs >= outage.fromMs && call.atMs < outage.toMs) return unavailable('service unavailable (outage)');
    const forced = this.forceNext.shift();
    if (forced === 'error5xx') return unavailable('service unavailable');
    if (forced === 'timeout') {
      await this.world.sleep(2_000);
      return 'timeout';
    }
    if (forced === 'chargeThenDrop') this.forceLostAnswers++;
    // Before the endpoint runs (a load balancer, a busy server): nothing is saved for the key.
    if (this.random.chance(this.faults.error5xx)) return unavailable('service unavailable');
    let memory = this.forget(key);
    if (memory && (memory.amount !== payment.amount || memory.currency !== payment.currency))
      return answered(422, {
        error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with' },
      });
    if (memory?.inFlight)
      return answered(409, { error: { type: 'idempotency_error', code: 'idempotency_key_in_use', message: 'a request with this key is in flight' } });
    if (!memory) {
      memory = { firstCallMs: this.world.nowMs(), inFlight: true, status: 0, body: undefined, amount: payment.amount, currency: payment.currency };
      this.keys.set(key, memory);
      if (!this.firstSeenMs.has(key)) this.firstSeenMs.set(key, memory.firstCallMs);
      // Sometimes the provider's work outlasts the client's patience: the client gives up (a timeout) while the request
      // is still in flight, and a retry with the key meanwhile answers 409 (tied to the lost-answer rate).
      const slowMs = this.random.chance(this.faults.lostAnswer / 2) ? this.random.logBetween(this.clientTimeoutMs, 60_000) : undefined;
      if (slowMs !== undefined) {
        const fresh = memory;
        this.world.log(`provider: charge ${key} in flight for ${Math.round(slowMs / 1000)} s; the client gives up at ${this.clientTimeoutMs / 1000} s`);
        const calledAtMs = this.world.nowMs();
        this.world.at(calledAtMs + slowMs, () => this.finish(fresh, payment, key, calledAtMs));
        await this.world.sleep(this.clientTimeoutMs);
        return 'timeout';
      }
      await this.world.sleep(this.random.logBetween(10, 300));
      this.finish(memory, payment, key, call.atMs);
    } else if (memory.status === 201) {
      const replay = answered(200, memory.body);
      return this.deliver(call, replay);
    }
    return this.deliver(call, answered(memory.status, memory.body));
  }

  /** The endpoint's work for a fresh key: the charge (or the decline) made and saved as the key's response. */
  private finish(memory: KeyMemory, payment: PaymentRequested, key: string, calledAtMs: number): void {
    if (payment.customerId.startsWith('decline')) {
      // Stripe's decline code, as the fake provider answers it.
      Object.assign(memory, { status: 402, body: { error: { code: 'card_declined', message: 'card declined' }, reason: 'card_declined' } });
    } else {
      const chargeId = `ch_${++this.chargeSeq}`;
      this.ledger.push({
        key,
        paymentId: payment.paymentId,
        chargeId,
        atMs: this.world.nowMs(),
        calledAtMs,
        amount: payment.amount,
        currency: payment.currency,
      });
      Object.assign(memory, { status: 201, body: { id: chargeId, status: 'succeeded', amount: payment.amount, currency: payment.currency } });
      this.afterCharge?.();
    }
    // The endpoint ran and failed after its work: the 500 is the key's saved response (Stripe saves it, "including 500 errors").
    if (this.random.chance(this.faults.error5xxAfter))
      Object.assign(memory, { status: 500, body: { error: { type: 'api_error', message: 'internal error' } } });
    memory.inFlight = false;
  }

  /** The answer on its way back: lost (a reset, a timeout after the work) or delivered. */
  private async deliver(call: ProviderCall, answer: HttpAnswer): Promise<HttpAnswer> {
    await this.holdAnswer?.(call);
    if (this.forceLostAnswers > 0 || this.random.chance(this.faults.lostAnswer)) {
      this.forceLostAnswers = Math.max(0, this.forceLostAnswers - 1);
      await this.world.sleep(this.random.logBetween(1_000, 10_000));
      call.httpStatus = undefined;
      this.world.log(`provider: charge ${call.key}: the answer is lost`);
      return this.random.chance(0.5) ? 'timeout' : 'connection-lost';
    }
    if (typeof answer !== 'string') call.answered = answer.status === 402 ? 'declined' : answer.status < 300 ? 'succeeded' : undefined;
    return answer;
  }

  /** `GET /v1/charges?idempotency_key=K`: the charges made under the key (after the look-up's lag). */
  private async lookUp(key: string): Promise<HttpAnswer> {
    await this.world.sleep(this.random.logBetween(20, 500));
    this.calls.push({ key, atMs: this.world.nowMs(), kind: 'lookup' });
    if (this.lookup === 'none') return { status: 404, body: { error: { message: 'not found' } } };
    const charges = this.ledger.filter((c) => c.key === key && this.world.nowMs() - c.atMs >= this.faults.lookupLagMs);
    return { status: 200, body: { data: charges.map((c) => ({ id: c.chargeId, status: 'succeeded', amount: c.amount, currency: c.currency })) } };
  }
}
