import type { DemoMutation } from './mutations';
import type { ProviderLookup } from '../../src/payments/providerLookup';
import type { ChaosProgress } from './chaosReport';

/** The chaos run's options; `npm run demo -- --help` (args.ts) words each one. */
export interface ChaosOptions {
  /** Logical messages (not copies): `round(messages x ordersShare)` to orders, the rest to payments. */
  readonly messages: number;
  readonly ordersShare?: number;
  /** Extra copies the producer sends per message (0.3 = 30 % of messages sent twice). */
  readonly duplicateRate: number;
  /** Crash rate at each injection point, and the fake provider's rate of each fault. */
  readonly crashRate: number;
  /** Competing receivers per queue. */
  readonly consumers: number;
  readonly seed: number;
  readonly brokerDuplicateDetection?: boolean;
  /** Peek-lock duration (renewed while a handler runs, up to host.json's maxAutoLockRenewalDuration). */
  readonly lockDurationMs?: number;
  readonly maxDeliveryCount?: number;
  /** Claim lease; a delivery waits at most 80 % of it for another one's work. */
  readonly leaseMs?: number;
  /** Storage outages (all connections to Table Storage reset) spread over the run, and their length. */
  readonly outages?: number;
  readonly outageMs?: number;
  /** An external provider (loopback only) instead of the demo's own fake one. */
  readonly providerUrl?: string;
  /** How long the demo's fake provider remembers an Idempotency-Key, on the demo's clock (default forever). */
  readonly providerKeyMemoryMs?: number;
  /** `PAYMENT_PROVIDER_LOOKUP` the app is told, and the own provider's look-up: default {@link defaultProviderLookup}. */
  readonly providerLookup?: ProviderLookup;
  /** `PAYMENT_PROVIDER_KEY_MEMORY_HOURS` the app is told: default {@link defaultDeclaredKeyMemoryHours}. */
  readonly declaredKeyMemoryHours?: number;
  /** The time phase (docs/demo.md, "The time phase"; payments only), at `timePhaseAt` of the planned sends. */
  readonly timePhase?: boolean;
  readonly timePhaseAt?: number;
  /** The time phase's sweep keeps the records of the payments whose message is in the dead-letter queue. */
  readonly sweepHold?: boolean;
  /** Durable host kills (SIGKILL after the provider charged, then a restart) at most per run. */
  readonly maxHostKills?: number;
  /** A deliberate mistake (`--mutate`, tools/demo/mutations.ts): the ledger check must report it. */
  readonly mutation?: DemoMutation;
  /** Distinct PaymentSucceeded events of the rewards part (`rewardsPart.ts`; 0 = off). */
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
type OptionsWithoutDefault =
  'mutation' | 'providerUrl' | 'providerKeyMemoryMs' | 'providerLookup' | 'declaredKeyMemoryHours' | 'onProgress' | 'progressEveryMs';

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
