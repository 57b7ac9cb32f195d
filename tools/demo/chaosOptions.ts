import type { ProviderLookup } from '../../src/payments/providerLookup';
import type { ChaosProgress } from './chaosReport';

export interface ChaosOptions {
  /**
   * Logical messages of the run (originals, malformed, reused-key and status messages; not copies),
   * split between the consumers: `round(messages x ordersShare)` to orders, the rest to payments.
   */
  readonly messages: number;
  /** Share of `messages` that goes to the orders consumer (default 0.3; 0 = payments only). */
  readonly ordersShare?: number;
  /** Extra copies the producer sends per message (0.3 = 30 % of messages sent twice). */
  readonly duplicateRate: number;
  /** Crash rate at each injection point, and the fake provider's rate of each fault. */
  readonly crashRate: number;
  /** Competing receivers per queue. */
  readonly consumers: number;
  readonly seed: number;
  /** Broker duplicate detection (off by default, so producer duplicates reach the consumers). */
  readonly brokerDuplicateDetection?: boolean;
  /** Peek-lock duration (renewed while a handler runs, up to host.json's maxAutoLockRenewalDuration, as the host does). */
  readonly lockDurationMs?: number;
  readonly maxDeliveryCount?: number;
  /** Claim lease; a delivery waits at most 80 % of it for another one's work. */
  readonly leaseMs?: number;
  /** Storage outages (all connections to Table Storage reset) spread over the run, and their length. */
  readonly outages?: number;
  readonly outageMs?: number;
  /** An external provider (loopback only) instead of the demo's own fake one. */
  readonly providerUrl?: string;
  /**
   * How long the demo's fake provider remembers an Idempotency-Key, on the demo's (jumping) clock: default
   * forever; Stripe keeps keys 24 hours, so after the time phase's jump every key is forgotten and only the
   * app's own records stand between a resubmission and a second charge.
   */
  readonly providerKeyMemoryMs?: number;
  /**
   * `PAYMENT_PROVIDER_LOOKUP` the app is told the provider offers (docs/DESIGN.md "Payments: look before you charge
   * again"), and the demo's own provider's look-up (`none`: it answers `GET /v1/charges?idempotency_key=` 404, as Stripe
   * has no such list): default {@link defaultProviderLookup}.
   */
  readonly providerLookup?: ProviderLookup;
  /**
   * `PAYMENT_PROVIDER_KEY_MEMORY_HOURS` the app is told (default: the own provider's memory in hours, at most 24; an
   * external provider's: 24, Stripe's). Declaring less than the provider keeps is safe; more is not.
   */
  readonly declaredKeyMemoryHours?: number;
  /**
   * The time phase (default on): at `timePhaseAt` of the run the consumers' clock jumps past
   * retention, the expiry sweep runs, the dead-letter queue is resubmitted and reused keys after
   * expiry are sent (docs/demo.md, "The time phase"). Payments only.
   */
  readonly timePhase?: boolean;
  /** Share of the planned sends completed when the time phase runs (default 0.5). */
  readonly timePhaseAt?: number;
  /**
   * The time phase's sweep keeps the records of the payments whose message is in the dead-letter queue (default on,
   * as the app's expiry timer does). Off shows what happens without it: with a provider that forgets keys, the
   * resubmitted ones are charged again.
   */
  readonly sweepHold?: boolean;
  /** Durable host kills (SIGKILL after the provider charged, then a restart) at most per run. */
  readonly maxHostKills?: number;
  /**
   * Distinct PaymentSucceeded events of the rewards part (Event Hubs, `rewardsPart.ts`; 0 = off): sent by its own
   * producer over the run, consumed by the registered rewardsConsumer with host crashes at twice `crashRate` per batch.
   */
  readonly rewardsEvents?: number;
  /** Gives up waiting for the queues to drain after this long; what is left counts as lost. */
  readonly timeoutMs?: number;
  readonly onProgress?: (progress: ChaosProgress) => void;
  readonly progressEveryMs?: number;
}

/** The declared look-up: `by-key` for the demo's own provider (it offers one), `none` for an external one (Stripe offers none). */
export function defaultProviderLookup(external: boolean): ProviderLookup {
  return external ? 'none' : 'by-key';
}

/** The declared key memory: the own provider's (on the demo's clock), at most 24 h; an external provider's 24 h. */
export function defaultDeclaredKeyMemoryHours(external: boolean, keyMemoryMs: number | undefined): number {
  return external || keyMemoryMs === undefined ? 24 : Math.min(24, keyMemoryMs / 3_600_000);
}

/** The options without a fixed default (the look-up's depends on the provider: {@link defaultProviderLookup}). */
type OptionsWithoutDefault = 'providerUrl' | 'providerKeyMemoryMs' | 'providerLookup' | 'declaredKeyMemoryHours' | 'onProgress' | 'progressEveryMs';

export const DEFAULT_CHAOS_OPTIONS: Required<Omit<ChaosOptions, OptionsWithoutDefault>> = {
  messages: 2_000,
  ordersShare: 0.3,
  duplicateRate: 0.3,
  crashRate: 0.05,
  consumers: 8,
  seed: 1,
  brokerDuplicateDetection: false,
  // On the real engine a charge takes several queue hops (0.5 s polling, scaled) and a host kill stalls the work it
  // had dequeued for the queues' visibility timeout (1 min, the extension's minimum): a delivery waits 80 % of the
  // lease, 10 deliveries then cover such a stall.
  lockDurationMs: 20_000,
  maxDeliveryCount: 10,
  leaseMs: 15_000,
  outages: 2,
  outageMs: 1_000,
  timePhase: true,
  timePhaseAt: 0.5,
  sweepHold: true,
  maxHostKills: 2,
  rewardsEvents: 300,
  timeoutMs: 600_000,
};
