import { mulberry32 } from '../fakeProvider/random';

/** Where a consumer crash can be injected on a message's path. */
export const CrashPoint = {
  /** The consumer dies after receiving, before claiming the key. */
  BeforeClaim: 'beforeClaim',
  /** The consumer dies holding a fresh claim (lease), before starting the charge. */
  AfterClaim: 'afterClaim',
  /** The Durable host dies after the provider charged, before the entity recorded it (replayed later). */
  AfterCharge: 'afterCharge',
  /** The consumer dies after the charge finished, before completing its claim. */
  BeforeComplete: 'beforeComplete',
  /** The handler finished and the claim is completed, but the ack to the broker is lost. */
  BeforeAck: 'beforeAck',
} as const;
export type CrashPoint = (typeof CrashPoint)[keyof typeof CrashPoint];
export const CRASH_POINTS: readonly CrashPoint[] = Object.values(CrashPoint);

/** Fault points that are not crashes: a handler that starts only after its lock expired (lock lost). */
export const SLOW_HANDLER = 'slowHandler';
/** Every point the plan decides on. */
export type FaultPoint = CrashPoint | typeof SLOW_HANDLER;

/** A consumer process dying at a crash point: the engine leaves its message unsettled (the lock lapses). */
export class InjectedCrash extends Error {
  constructor(readonly point: CrashPoint) {
    super(`injected crash at ${point}`);
    this.name = 'InjectedCrash';
  }
}

/**
 * Decides, per crash point, whether to crash, from a hash of (seed, point, identity, pass number): "message M's n-th
 * pass through point P" is fixed by the seed, whatever the interleaving; only the number of passes depends on timing.
 */
export class FaultPlan {
  private readonly passes = new Map<string, number>();
  readonly injected: Record<FaultPoint, number> = { beforeClaim: 0, afterClaim: 0, afterCharge: 0, beforeComplete: 0, beforeAck: 0, slowHandler: 0 };

  constructor(
    private readonly seed: number,
    private readonly rates: Readonly<Record<FaultPoint, number>>,
  ) {}

  /**
   * `rate` at every crash point; slow handlers at a fifth of it (each one holds a receiver for a
   * whole lock duration, so at the full rate they would dominate the run's time).
   */
  static uniform(seed: number, rate: number): FaultPlan {
    const rates = Object.fromEntries(CRASH_POINTS.map((p) => [p, rate])) as Record<CrashPoint, number>;
    return new FaultPlan(seed, { ...rates, [SLOW_HANDLER]: rate / 5 });
  }

  /** True (and counted) when `identity` suffers the fault at `point` this time. */
  shouldCrash(point: FaultPoint, identity: string): boolean {
    const rate = this.rates[point];
    if (!(rate > 0)) return false;
    const passKey = `${point}\u0000${identity}`;
    const pass = (this.passes.get(passKey) ?? 0) + 1;
    this.passes.set(passKey, pass);
    const crash = mulberry32(fnv1a(`${this.seed}|${passKey}|${pass}`))() < rate;
    if (crash) this.injected[point]++;
    return crash;
  }

  /** Throws {@link InjectedCrash} when `identity` crashes at `point` this time. */
  maybeCrash(point: CrashPoint, identity: string): void {
    if (this.shouldCrash(point, identity)) throw new InjectedCrash(point);
  }

  /** Crashes injected (all crash points; slow handlers are not crashes). */
  get total(): number {
    return CRASH_POINTS.reduce((sum, p) => sum + this.injected[p], 0);
  }
}

/** 32-bit FNV-1a of a string. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
