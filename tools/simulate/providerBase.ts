import type { PaymentRequested } from '../../src/payments/schema';
import { legacyProviderWorld, type ConflictAnswer, type ProviderWorld } from './profiles';
import { chargeStatusAt } from './providerList';
import type { HttpAnswer, KeyMemory, LedgerCharge, ProviderCall, ProviderFaults } from './providerTypes';
import type { Random } from './random';
import type { World } from './world';

/**
 * The simulated provider's state and its small rules (what a key remembers, a pre-execution answer, the conflict and
 * mismatch answers, a replay, the answer's way back, latency): {@link SimProvider} (provider.ts) serves the requests.
 */
export abstract class SimProviderBase {
  protected readonly keys = new Map<string, KeyMemory>();
  readonly ledger: LedgerCharge[] = [];
  readonly calls: ProviderCall[] = [];
  protected chargeSeq = 0;
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
  protected readonly firstSeenMs = new Map<string, number>();
  /** The body each key was first used with (the invariants' view: a reuse for another payment is told apart). */
  protected readonly firstBody = new Map<string, PaymentRequested>();
  /** The provider this schedule has (a profile and its draws). */
  readonly profileWorld: ProviderWorld;
  protected readonly legacy: boolean;
  protected refusal?: ProviderWorld['refusalWindow'];

  constructor(
    protected readonly world: World,
    protected readonly random: Random,
    protected readonly faults: ProviderFaults,
    readonly lookup: 'none' | 'by-key',
    readonly keyMemoryMs: number,
    /** The app's provider client gives up after this long (`PAYMENT_PROVIDER_TIMEOUT_MS`). */
    protected readonly clientTimeoutMs = 10_000,
    profileWorld?: ProviderWorld,
    /** The profile's draws (a stream of their own). */
    protected readonly extra?: Random,
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

  protected forget(key: string): KeyMemory | undefined {
    const memory = this.keys.get(key);
    if (memory && !memory.inFlight && this.world.nowMs() - memory.firstCallMs > this.keyMemoryMs) this.keys.delete(key);
    return this.keys.get(key);
  }

  /**
   * Before the endpoint (and its idempotency layer) runs: an authentication or routing layer's 4xx in a refusal window,
   * the rate limiter's 429. Nothing is saved for the key (Stripe: "rate limiters run before the API's idempotency layer.
   * The same goes for a 401 ... or most 400s"). The legacy provider has neither.
   */
  protected preExecution(): HttpAnswer | undefined {
    if (this.legacy) return undefined;
    const now = this.world.nowMs();
    const refusal = this.refusal;
    if (refusal && now >= refusal.fromMs && now < refusal.toMs)
      return { status: refusal.status, body: { error: { type: 'invalid_request_error', message: `refused before execution (${refusal.status})` } } };
    if (this.extra!.chance(this.profileWorld.rateLimitShare)) return { status: 429, body: { error: { type: 'rate_limit', message: 'too many requests' } } };
    return undefined;
  }

  /** A same-key call while the key is in flight: the profile's answer (Stripe 409; Adyen 409/422 704 transient). */
  protected conflict(): ConflictAnswer {
    const answers = this.profileWorld.profile.conflict;
    return this.legacy || answers.length === 1 ? answers[0] : this.extra!.pick(answers);
  }

  /** Whether a body differs from the key's first (the legacy provider compared amount and currency only). */
  protected mismatch(memory: KeyMemory, payment: PaymentRequested): boolean {
    const first = memory.payment;
    if (first.amount !== payment.amount || first.currency !== payment.currency) return true;
    return !this.legacy && first.customerId !== payment.customerId;
  }

  /** A replay of a key that charged: 200 with the first body (Stripe) or the charge's current state (PayPal, Braintree). */
  protected replay(memory: KeyMemory, answered: (status: number, body: unknown) => HttpAnswer): HttpAnswer {
    if (!this.profileWorld.profile.replayCurrent || !memory.charge) return answered(memory.status === 201 ? 200 : memory.status, memory.body);
    return answered(200, this.chargeBody(memory.charge));
  }

  protected chargeBody(charge: LedgerCharge): unknown {
    return { id: charge.chargeId, status: chargeStatusAt(charge, this.world.nowMs()), amount: charge.amount, currency: charge.currency };
  }

  /**
   * How long a fresh key's work takes, if drawn slow (undefined: the usual 10-300 ms). The legacy provider: in flight
   * 10-60 s at half the lost-answer rate; a profile: also its slow share, up to its longest POST (past the client's
   * timeout or not).
   */
  protected inFlightMs(): number | undefined {
    const forced = this.forceInFlightMs.shift();
    if (forced !== undefined) return forced;
    const legacySlow = this.random.chance(this.faults.lostAnswer / 2);
    if (this.legacy) return legacySlow ? this.random.logBetween(this.clientTimeoutMs, 60_000) : undefined;
    const maxMs = Math.max(this.profileWorld.profile.slowPostMaxMs, 1_001);
    if (legacySlow) return this.extra!.logBetween(Math.min(this.clientTimeoutMs, maxMs - 1), maxMs);
    return this.extra!.chance(this.profileWorld.slowShare) ? this.extra!.logBetween(1_000, maxMs) : undefined;
  }

  /** The answer on its way back: lost (a reset, a timeout after the work) or delivered. */
  protected async deliver(call: ProviderCall, answer: HttpAnswer): Promise<HttpAnswer> {
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
  protected async getLatency(): Promise<'timeout' | undefined> {
    const drawn = this.legacy ? this.random.logBetween(20, 500) : this.extra!.logBetween(20, Math.max(21, this.profileWorld.lookupSlowMaxMs));
    const ms = this.forceLookupMs.shift() ?? drawn;
    if (ms > this.clientTimeoutMs) {
      await this.world.sleep(this.clientTimeoutMs);
      return 'timeout';
    }
    await this.world.sleep(ms);
    return undefined;
  }
}
