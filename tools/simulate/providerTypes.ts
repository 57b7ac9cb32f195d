import type { ChargeResult, PaymentRequested } from '../../src/payments/schema';

/** The simulated provider's types: its faults, its memory of a key, its ledger, the calls it took, its answers. */

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
export interface KeyMemory {
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
export type NoAnswer = 'connection-lost' | 'timeout';

/** What the simulated server answers one request with. */
export type HttpAnswer = { readonly status: number; readonly body: unknown; readonly headers?: Readonly<Record<string, string>> } | NoAnswer;

/** The provider's base URL in the simulation (never resolved: `fetch` below answers it in process). */
export const SIM_PROVIDER_URL = 'http://provider.sim.invalid/';
