import type { SimApp } from './app';
import type { ProviderWorld } from './profiles';
import type { World } from './world';

/** A directed schedule of one defect (scenarios.ts, scenariosProvider.ts). */
export interface Scenario {
  readonly description: string;
  /** Settings on top of the simulator's (a team's choice the schedule needs). */
  readonly settings?: Readonly<Record<string, string>>;
  /** The provider's declared look-up for the schedule (world 1; in world 2 the provider's profile declares it). */
  readonly lookup: 'none' | 'by-key';
  /** The world it runs in (schedule.ts): 1 (default, the world before issue 62) or 2 (provider profiles). */
  readonly world?: 1 | 2;
  /** World 2: the provider this scenario needs, from the one its seed drew (a profile, a look-up, no random 4xx window, ...). */
  readonly provider?: (drawn: ProviderWorld) => ProviderWorld;
  /** Places the faults; `paymentId` is the one payment sent at the start. */
  readonly script: (app: SimApp, world: World, paymentId: string) => void;
  /** Found on main's code and not fixed yet (issue 62): reported, not counted, and expected broken by test/simulation until the fix. */
  readonly awaitsFix?: string;
  /** What the schedule must have shown for it to count (its faults happened, its payment got where it needs): why not, or undefined. */
  readonly premise: (app: SimApp, paymentId: string) => string | undefined;
}
