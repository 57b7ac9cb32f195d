import type { ChargeResult, PaymentRequested } from '../../src/payments/schema';
import { legacyProviderWorld, type ConflictAnswer, type ProviderWorld } from './profiles';
import { chargeStatusAt, listCharges } from './providerList';

export { chargeStatusAt } from './providerList';
import { identityOf } from './identity';
import type { Random } from './random';
import type { World } from './world';

/** The provider's faults this schedule (rates per call). */
export interface ProviderFaults {
  error5xx: number;
  error5xxAfter: number;
  lostAnswer: number;
  /** A window in which every call answers 503 (an outage), or none. */
  outage?: { readonly fromMs: number; readonly toMs: number };
  /** How long a charge stays invisible to a look-up (a search index's lag); 0: at once. The legacy world's only lag. */
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
  readonly payment: PaymentRequested;
  /** The charge this key made, if any (a replay of the current state reads it). */
  charge?: LedgerCharge;
}

/** A charge the provider made (its ledger: never forgotten, unlike the keys). */
export interface LedgerCharge {
  readonly key: string;
  readonly paymentId: string;
  /** The customer of the body that made it (with amount and currency: which payment it is, when a producer reused the id). */
  readonly customerId: string;
  readonly chargeId: string;
  readonly atMs: number;
  /** When the call that made it reached the provider (a charge in flight is made later). */
  readonly calledAtMs: number;
  readonly amount: number;
  readonly currency: string;
  /** A non-final success (`processing`, `Pending`): it reads `pending` until then (it always succeeds in this model). */
  readonly pendingUntilMs?: number;
}

/** One provider call as the invariants see it. */
export interface ProviderCall {
  readonly key: string;
  readonly atMs: number;
  readonly kind: 'charge' | 'lookup' | 'list';
  /** A charge call: whether the same activity looked the key up first. */
  readonly lookedUp?: boolean;
  /** A charge call: when the provider first took in a call with this key (that may have charged), if before this one. */
  readonly keyFirstSeenMs?: number;
  /** A charge call whose body is not the one the key was first used with (a producer reused the id for another payment). */
  readonly reusedKey?: boolean;
  /** The provider's final answer to a charge call that was delivered (no fault): its status. */
  answered?: ChargeResult['status'];
  /** The HTTP status the provider answered with (undefined: no answer reached the caller). */
  httpStatus?: number;
}

/** A fault that reaches the caller as no HTTP answer at all. */
type NoAnswer = 'connection-lost' | 'timeout';

/** What the simulated server answers one request with. */
type HttpAnswer = { readonly status: number; readonly body: unknown; readonly headers?: Readonly<Record<string, string>> } | NoAnswer;

/** The provider's base URL in the simulation (never resolved: `fetch` below answers it in process). */
export const SIM_PROVIDER_URL = 'http://provider.sim.invalid/';

/**
 * The payment provider as an HTTP server. `POST /v1/charges` with `Idempotency-Key` charges once a key; the first
 * response for a key is saved and replayed to every later call with it for the profile's key memory after its first
 * call (then forgotten: a call with it charges again); a call with a key in flight gets the profile's conflict answer,
 * a key reused with another body 422 (or, `mismatch: replay`, the key's charge); declines answer 402 for customers
 * whose id starts with `decline`. `GET /v1/charges?idempotency_key=K` lists the charges made under K (after the lag;
 * `pending` while a charge is not final), or 404 without a look-up; `GET /v1/charges?created_gte=..&created_lt=..`
 * is the list by time window (providerList.ts). The app's own `PaymentProviderClient` reads these answers through
 * {@link SimProvider.session}'s `fetch`: its classification is what the invariants judge.
 *
 * The profile (profiles.ts; `legacy` for the kept seeds) decides the rest: what a 5xx after the work saves, what a
 * replay answers, pending charges, slow POSTs and look-ups past the client's timeout, a window of pre-execution 4xx
 * answers (a rotated secret), 429s. Every draw the profiles add comes from `extra` (its own stream): the legacy
 * provider draws exactly what it drew before.
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
  /** A scenario's forced timings: the next look-ups take these long (ms); the next fresh charges stay in flight this long. */
  readonly forceLookupMs: number[] = [];
  readonly forceInFlightMs: number[] = [];
  /** A scenario's forced fault: the next `n` charges made are followed by the endpoint's 500 (saved or not, as the profile does). */
  forceFailAfterCharge = 0;
  /** A scenario's hook: told when a charge is made (before its answer). */
  afterCharge?: () => void;
  /** A script's hook: awaited before a charge call's answer goes back (the script does something while the caller waits). */
  holdAnswer?: (call: ProviderCall) => Promise<void>;
  /** When each key was first taken in (kept after the key is forgotten: the invariants' view, not the provider's). */
  private readonly firstSeenMs = new Map<string, number>();
  /** The body each key was first used with (the invariants' view: a reuse for another payment is told apart). */
  private readonly firstBody = new Map<string, PaymentRequested>();
  /** The provider this schedule has (a profile and its draws). */
  readonly profileWorld: ProviderWorld;
  private readonly legacy: boolean;
  private refusal?: ProviderWorld['refusalWindow'];

  constructor(
    private readonly world: World,
    private readonly random: Random,
    private readonly faults: ProviderFaults,
    readonly lookup: 'none' | 'by-key',
    readonly keyMemoryMs: number,
    /** The app's provider client gives up after this long (`PAYMENT_PROVIDER_TIMEOUT_MS`). */
    private readonly clientTimeoutMs = 10_000,
    profileWorld?: ProviderWorld,
    /** The profile's draws (a stream of their own). */
    private readonly extra?: Random,
  ) {
    this.profileWorld = profileWorld ?? legacyProviderWorld(lookup, faults.lookupLagMs);
    this.legacy = this.profileWorld.profile.name === 'legacy' || extra === undefined;
    this.refusal = this.profileWorld.refusalWindow;
  }

  setOutage(window: { fromMs: number; toMs: number }): void {
    this.faults.outage = window;
  }

  /** A scenario's pre-execution window: every call answers `status` (a rotated secret: 401). */
  setRefusal(window: { fromMs: number; toMs: number; status: 400 | 401 | 403 | 404 }): void {
    this.refusal = window;
  }

  /** No more faults (the schedule's quiet phase; the look-up's lag and the profile stay: they are how the provider is). */
  quiet(): void {
    Object.assign(this.faults, { error5xx: 0, error5xxAfter: 0, lostAnswer: 0, outage: undefined });
    this.refusal = undefined;
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
        if (target.searchParams.has('idempotency_key')) {
          lookedUp = true;
          answer = await this.lookUp(target.searchParams.get('idempotency_key') ?? '');
        } else answer = await this.list(target.searchParams);
      } else if (init?.method === 'POST' && target.pathname === '/v1/charges') {
        const payment = JSON.parse(init.body as string) as PaymentRequested;
        answer = await this.charge(payment, headers.get('idempotency-key') ?? '', lookedUp);
      } else answer = { status: 404, body: { error: { message: 'not found' } } };
      if (answer === 'connection-lost') throw new TypeError('fetch failed', { cause: new Error('socket hang up (simulated: the connection dropped)') });
      if (answer === 'timeout') throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'content-type': 'application/json', ...answer.headers } });
    };
    // The client passes a URL and a string body: the only shapes this server reads.
    return { fetch: fetchOf as unknown as typeof fetch };
  }

  private forget(key: string): KeyMemory | undefined {
    const memory = this.keys.get(key);
    if (memory && !memory.inFlight && this.world.nowMs() - memory.firstCallMs > this.keyMemoryMs) this.keys.delete(key);
    return this.keys.get(key);
  }

  /**
   * Before the endpoint (and its idempotency layer) runs: an authentication or routing layer's 4xx in a refusal window,
   * the rate limiter's 429. Nothing is saved for the key (Stripe: "rate limiters run before the API's idempotency layer.
   * The same goes for a 401 ... or most 400s"). The legacy provider has neither.
   */
  private preExecution(): HttpAnswer | undefined {
    if (this.legacy) return undefined;
    const now = this.world.nowMs();
    const refusal = this.refusal;
    if (refusal && now >= refusal.fromMs && now < refusal.toMs)
      return { status: refusal.status, body: { error: { type: 'invalid_request_error', message: `refused before execution (${refusal.status})` } } };
    if (this.extra!.chance(this.profileWorld.rateLimitShare)) return { status: 429, body: { error: { type: 'rate_limit', message: 'too many requests' } } };
    return undefined;
  }

  /** A same-key call while the key is in flight: the profile's answer (Stripe 409; Adyen 409/422 704 transient). */
  private conflict(): ConflictAnswer {
    const answers = this.profileWorld.profile.conflict;
    return this.legacy || answers.length === 1 ? answers[0] : this.extra!.pick(answers);
  }

  /** Whether a body differs from the key's first (the legacy provider compared amount and currency only). */
  private mismatch(memory: KeyMemory, payment: PaymentRequested): boolean {
    const first = memory.payment;
    if (first.amount !== payment.amount || first.currency !== payment.currency) return true;
    return !this.legacy && first.customerId !== payment.customerId;
  }

  /** `POST /v1/charges`: what the server answers (or that no answer reaches the caller). */
  private async charge(payment: PaymentRequested, key: string, lookedUp: boolean): Promise<HttpAnswer> {
    await this.world.sleep(this.random.logBetween(20, 800));
    const firstBody = this.firstBody.get(key);
    if (!firstBody) this.firstBody.set(key, payment);
    const reusedKey = firstBody !== undefined && identityOf(firstBody) !== identityOf(payment);
    const call: ProviderCall = {
      key,
      atMs: this.world.nowMs(),
      kind: 'charge',
      lookedUp,
      keyFirstSeenMs: this.firstSeenMs.get(key),
      ...(reusedKey ? { reusedKey } : {}),
    };
    this.calls.push(call);
    const answered = (status: number, body: unknown, headers?: Readonly<Record<string, string>>): HttpAnswer => {
      call.httpStatus = status;
      const saved = status === 500 && this.profileWorld.profile.failuresSaved;
      this.world.log(`provider: charge ${key} -> ${status}${saved ? " (the key's saved response)" : ''}`);
      return { status, body, headers };
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
    const refused = this.preExecution();
    if (refused && typeof refused !== 'string') return answered(refused.status, refused.body);
    let memory = this.forget(key);
    if (memory && this.mismatch(memory, payment)) {
      if (this.profileWorld.profile.mismatch === 'replay' && !memory.inFlight) return this.deliver(call, this.replay(memory, answered));
      return answered(422, {
        error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with' },
      });
    }
    if (memory?.inFlight) {
      const conflict = this.conflict();
      return answered(conflict.status, conflict.body, conflict.headers);
    }
    if (!memory) {
      memory = { firstCallMs: this.world.nowMs(), inFlight: true, status: 0, body: undefined, payment };
      this.keys.set(key, memory);
      if (!this.firstSeenMs.has(key)) this.firstSeenMs.set(key, memory.firstCallMs);
      const inFlightMs = this.inFlightMs();
      if (inFlightMs !== undefined && (this.legacy || inFlightMs > this.clientTimeoutMs)) {
        // The provider's work outlasts the client's patience: the client gives up (a timeout) while the request is still
        // in flight, and a retry with the key meanwhile gets the conflict answer.
        const fresh = memory;
        this.world.log(`provider: charge ${key} in flight for ${Math.round(inFlightMs / 1000)} s; the client gives up at ${this.clientTimeoutMs / 1000} s`);
        const calledAtMs = this.world.nowMs();
        this.world.at(calledAtMs + inFlightMs, () => this.finish(fresh, payment, key, calledAtMs));
        await this.world.sleep(this.clientTimeoutMs);
        return 'timeout';
      }
      await this.world.sleep(inFlightMs ?? this.random.logBetween(10, 300));
      if (this.finish(memory, payment, key, call.atMs) === 'unsaved-500')
        return this.deliver(call, answered(500, { error: { type: 'api_error', message: 'internal error' } }));
    } else if (memory.status === 201 || (this.profileWorld.profile.replayCurrent && memory.charge)) {
      return this.deliver(call, this.replay(memory, answered));
    }
    return this.deliver(call, answered(memory.status, memory.body));
  }

  /** A replay of a key that charged: 200 with the first body (Stripe) or the charge's current state (PayPal, Braintree). */
  private replay(memory: KeyMemory, answered: (status: number, body: unknown) => HttpAnswer): HttpAnswer {
    if (!this.profileWorld.profile.replayCurrent || !memory.charge) return answered(memory.status === 201 ? 200 : memory.status, memory.body);
    return answered(200, this.chargeBody(memory.charge));
  }

  private chargeBody(charge: LedgerCharge): unknown {
    return { id: charge.chargeId, status: chargeStatusAt(charge, this.world.nowMs()), amount: charge.amount, currency: charge.currency };
  }

  /**
   * How long a fresh key's work takes, if drawn slow (undefined: the usual 10-300 ms). The legacy provider: in flight
   * 10-60 s at half the lost-answer rate; a profile: also its slow share, up to its longest POST (past the client's
   * timeout or not).
   */
  private inFlightMs(): number | undefined {
    const forced = this.forceInFlightMs.shift();
    if (forced !== undefined) return forced;
    const legacySlow = this.random.chance(this.faults.lostAnswer / 2);
    if (this.legacy) return legacySlow ? this.random.logBetween(this.clientTimeoutMs, 60_000) : undefined;
    const maxMs = Math.max(this.profileWorld.profile.slowPostMaxMs, 1_001);
    if (legacySlow) return this.extra!.logBetween(Math.min(this.clientTimeoutMs, maxMs - 1), maxMs);
    return this.extra!.chance(this.profileWorld.slowShare) ? this.extra!.logBetween(1_000, maxMs) : undefined;
  }

  /**
   * The endpoint's work for a fresh key: the charge (or the decline) made and saved as the key's response; `unsaved-500`
   * when it then failed and the profile saves nothing (the call that made it gets the 500; a retry re-executes).
   */
  private finish(memory: KeyMemory, payment: PaymentRequested, key: string, calledAtMs: number): 'unsaved-500' | undefined {
    if (payment.customerId.startsWith('decline')) {
      // Stripe's decline code, as the fake provider answers it.
      Object.assign(memory, { status: 402, body: { error: { code: 'card_declined', message: 'card declined' }, reason: 'card_declined' } });
    } else {
      const pending = this.profileWorld.profile.pending;
      const pendingUntilMs =
        !this.legacy && pending && this.extra!.chance(this.profileWorld.pendingShare)
          ? this.world.nowMs() + this.extra!.logBetween(pending.minMs, pending.maxMs)
          : undefined;
      const charge: LedgerCharge = {
        key,
        paymentId: payment.paymentId,
        customerId: payment.customerId,
        chargeId: `ch_${++this.chargeSeq}`,
        atMs: this.world.nowMs(),
        calledAtMs,
        amount: payment.amount,
        currency: payment.currency,
        ...(pendingUntilMs !== undefined ? { pendingUntilMs } : {}),
      };
      this.ledger.push(charge);
      if (pendingUntilMs !== undefined)
        this.world.log(`provider: charge ${key} (${charge.chargeId}) pending for ${Math.round((pendingUntilMs - charge.atMs) / 60_000)} min`);
      Object.assign(memory, { status: 201, body: this.chargeBody(charge), charge });
      this.afterCharge?.();
    }
    // The endpoint ran and failed after its work: Stripe saves the 500 as the key's response ("including 500 errors");
    // Checkout.com caches only 2xx (a retry re-executes: the key is forgotten); PayPal replays the current state.
    const forcedFail = this.forceFailAfterCharge > 0 && memory.status === 201;
    if (forcedFail) this.forceFailAfterCharge--;
    if (this.random.chance(this.faults.error5xxAfter) || forcedFail) {
      const saved = this.profileWorld.profile.failuresSaved;
      if (saved || this.profileWorld.profile.replayCurrent)
        Object.assign(memory, { status: 500, body: { error: { type: 'api_error', message: 'internal error' } } });
      else {
        this.keys.delete(key);
        memory.inFlight = false;
        this.world.log(`provider: charge ${key} answered 500 after its work; nothing saved for the key (a retry re-executes)`);
        return 'unsaved-500';
      }
    }
    memory.inFlight = false;
    return undefined;
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
    if (typeof answer !== 'string') {
      const body = answer.body as { status?: unknown } | undefined;
      call.answered = answer.status === 402 ? 'declined' : answer.status < 300 && body?.status === 'succeeded' ? 'succeeded' : undefined;
    }
    return answer;
  }

  /** A GET's latency: 20-500 ms (legacy), or up to the schedule's slow look-up; past the client's timeout it times out. */
  private async getLatency(): Promise<'timeout' | undefined> {
    const drawn = this.legacy ? this.random.logBetween(20, 500) : this.extra!.logBetween(20, Math.max(21, this.profileWorld.lookupSlowMaxMs));
    const ms = this.forceLookupMs.shift() ?? drawn;
    if (ms > this.clientTimeoutMs) {
      await this.world.sleep(this.clientTimeoutMs);
      return 'timeout';
    }
    await this.world.sleep(ms);
    return undefined;
  }

  /** `GET /v1/charges?idempotency_key=K`: the charges made under the key (after the look-up's lag), pending ones as such. */
  private async lookUp(key: string): Promise<HttpAnswer> {
    const late = await this.getLatency();
    this.calls.push({ key, atMs: this.world.nowMs(), kind: 'lookup' });
    if (late) return late;
    const refused = this.preExecution();
    if (refused) return refused;
    if (this.profileWorld.lookup === 'none') return { status: 404, body: { error: { message: 'not found' } } };
    const now = this.world.nowMs();
    const lagMs = this.legacy ? this.faults.lookupLagMs : this.profileWorld.lookupLagMs(now);
    const charges = this.ledger.filter((c) => c.key === key && now - c.atMs >= lagMs);
    return {
      status: 200,
      body: {
        data: charges.map((c) => ({
          id: c.chargeId,
          status: chargeStatusAt(c, now),
          amount: c.amount,
          currency: c.currency,
          idempotency_key: c.key,
          created: c.atMs,
        })),
      },
    };
  }

  /** `GET /v1/charges?created_gte=&created_lt=&limit=[&starting_after=]`: the list by time window (providerList.ts). */
  private async list(query: URLSearchParams): Promise<HttpAnswer> {
    const late = await this.getLatency();
    this.calls.push({ key: '', atMs: this.world.nowMs(), kind: 'list' });
    if (late) return late;
    const refused = this.preExecution();
    if (refused) return refused;
    if (!this.profileWorld.profile.listLagMs) return { status: 404, body: { error: { message: 'not found' } } };
    return listCharges(this.ledger, query, this.world.nowMs(), this.profileWorld.listLagMs);
  }
}
