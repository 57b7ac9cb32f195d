import type { PaymentRequested } from '../../src/payments/schema';
import { identityOf } from './identity';
import { SimProviderBase } from './providerBase';
import { chargeStatusAt, listCharges } from './providerList';
import type { HttpAnswer, KeyMemory, LedgerCharge, ProviderCall } from './providerTypes';

export { chargeStatusAt } from './providerList';
export { SIM_PROVIDER_URL, type LedgerCharge, type ProviderCall, type ProviderFaults } from './providerTypes';

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
export class SimProvider extends SimProviderBase {
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
