import { LookupUnsupportedError, TransientProviderError } from '../../src/payments/PaymentProviderClient';
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

/** One key as the provider remembers it. */
interface KeyMemory {
  firstCallMs: number;
  result: ChargeResult;
  inFlight: boolean;
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
}

/**
 * The payment provider, Stripe's contract: a key is remembered for `keyMemoryMs` after its first call (then
 * forgotten: a call with it charges again), a call with a key in flight answers 409, declines answer 402 for
 * customers whose id starts with `decline`. `lookup: 'by-key'` finds a charge by its key (after the lag); `none` answers 404.
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
  /** When each key was first taken in (kept after the key is forgotten: the invariants' view, not the provider's). */
  private readonly firstSeenMs = new Map<string, number>();

  constructor(
    private readonly world: World,
    private readonly random: Random,
    private readonly faults: ProviderFaults,
    readonly lookup: 'none' | 'by-key',
    readonly keyMemoryMs: number,
  ) {}

  setOutage(window: { fromMs: number; toMs: number }): void {
    this.faults.outage = window;
  }

  /** No more faults (the schedule's quiet phase; the look-up's lag stays: it is how the provider is). */
  quiet(): void {
    Object.assign(this.faults, { error5xx: 0, error5xxAfter: 0, lostAnswer: 0, outage: undefined });
  }

  /** The provider as one activity execution sees it (the invariants need to know whether that activity looked up first). */
  session(): { charge: SimProvider['charge']; findCharge: SimProvider['findCharge'] } {
    let lookedUp = false;
    return {
      charge: (payment, key, correlationId) => this.charge(payment, key, correlationId, lookedUp),
      findCharge: async (key, correlationId) => {
        lookedUp = true;
        return this.findCharge(key, correlationId);
      },
    };
  }

  private forget(key: string): KeyMemory | undefined {
    const memory = this.keys.get(key);
    if (memory && !memory.inFlight && this.world.nowMs() - memory.firstCallMs > this.keyMemoryMs) this.keys.delete(key);
    return this.keys.get(key);
  }

  async charge(payment: PaymentRequested, key: string, _correlationId?: string, lookedUp = false): Promise<ChargeResult> {
    await this.world.sleep(this.random.logBetween(20, 800));
    const call: ProviderCall = { key, atMs: this.world.nowMs(), kind: 'charge', lookedUp, keyFirstSeenMs: this.firstSeenMs.get(key) };
    this.calls.push(call);
    const outage = this.faults.outage;
    if (outage && call.atMs >= outage.fromMs && call.atMs < outage.toMs) throw new TransientProviderError('payment provider answered 503 (outage)', 503);
    const forced = this.forceNext.shift();
    if (forced === 'error5xx') throw new TransientProviderError('payment provider answered 503', 503);
    if (forced === 'timeout') {
      await this.world.sleep(2_000);
      throw new TransientProviderError('payment provider call timed out');
    }
    if (forced === 'chargeThenDrop') this.forceLostAnswers++;
    if (this.random.chance(this.faults.error5xx)) throw new TransientProviderError('payment provider answered 503', 503);
    const memory = this.forget(key);
    if (memory?.inFlight) throw new TransientProviderError('payment provider: a request with this key is still in flight (409)', 409);
    let result: ChargeResult;
    if (memory) {
      if (memory.amount !== payment.amount || memory.currency !== payment.currency) {
        return { status: 'rejected', reason: 'idempotency key used before with a different body', code: 'idempotency-key-reused' };
      }
      result = memory.result;
    } else {
      const fresh: KeyMemory = {
        firstCallMs: this.world.nowMs(),
        result: { status: 'declined', reason: 'pending' },
        inFlight: true,
        amount: payment.amount,
        currency: payment.currency,
      };
      this.keys.set(key, fresh);
      if (!this.firstSeenMs.has(key)) this.firstSeenMs.set(key, fresh.firstCallMs);
      await this.world.sleep(this.random.logBetween(10, 300));
      if (payment.customerId.startsWith('decline'))
        fresh.result = { status: 'declined', reason: 'card_declined' }; // Stripe's decline code, as the fake provider answers
      else {
        const chargeId = `ch_${++this.chargeSeq}`;
        this.ledger.push({ key, paymentId: payment.paymentId, chargeId, atMs: this.world.nowMs(), amount: payment.amount, currency: payment.currency });
        fresh.result = { status: 'succeeded', chargeId, amount: payment.amount, currency: payment.currency };
        this.afterCharge?.();
      }
      fresh.inFlight = false;
      result = fresh.result;
    }
    if (this.random.chance(this.faults.error5xxAfter)) throw new TransientProviderError('payment provider answered 500 (after charging)', 500);
    if (this.forceLostAnswers > 0 || this.random.chance(this.faults.lostAnswer)) {
      this.forceLostAnswers = Math.max(0, this.forceLostAnswers - 1);
      await this.world.sleep(this.random.logBetween(1_000, 10_000));
      throw new TransientProviderError('payment provider call timed out (the charge was made)');
    }
    call.answered = result.status;
    return result;
  }

  async findCharge(key: string, _correlationId?: string): Promise<ChargeResult | undefined> {
    await this.world.sleep(this.random.logBetween(20, 500));
    this.calls.push({ key, atMs: this.world.nowMs(), kind: 'lookup' });
    if (this.lookup === 'none') throw new LookupUnsupportedError(404);
    const charge = this.ledger.find((c) => c.key === key && this.world.nowMs() - c.atMs >= this.faults.lookupLagMs);
    return charge && { status: 'succeeded', chargeId: charge.chargeId, amount: charge.amount, currency: charge.currency };
  }
}
