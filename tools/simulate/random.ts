/** The simulator's only source of chance: a seeded generator (SplitMix32), so one seed is one schedule, replayed exactly. */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x9e3779b9) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4_294_967_296;
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** A number in [min, max), spread evenly on a log scale (waits of milliseconds and of hours alike). */
  logBetween(min: number, max: number): number {
    return Math.round(Math.exp(Math.log(min) + this.next() * (Math.log(max) - Math.log(min))));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /**
   * The generator of one purpose of a schedule (`rate:table-unavailable`, `plan`, ...): its draws do not move when
   * another purpose draws more or less, so adding a fault to the catalogue keeps every kept seed's schedule.
   */
  static of(seed: number, purpose: string): Random {
    let hash = 0x811c9dc5;
    for (const char of `${seed}:${purpose}`) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
    return new Random(hash);
  }

  /** A new generator drawn from this one (one per part, so adding draws in one part does not move another's). */
  fork(): Random {
    return new Random(Math.floor(this.next() * 4_294_967_296));
  }
}
