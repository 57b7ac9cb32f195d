import { redeliveryWindow } from '../../src/lifecycle/retention';
import { SimApp } from './app';
import { SCENARIOS, type Scenario, type ScenarioName } from './scenarios';
import { FAULTS, FAULT_NAMES, type FaultName, type FaultRates, type Mutation } from './faults';
import { checkInvariants, type Violation } from './invariants';
import { Random } from './random';
import { World, type TraceLine } from './world';
import { drawProviderWorld, type ProfileName, type ProviderWorld } from './profiles';
import { drawSettings, startRefusal } from './drawSettings';
import { declaredFromProvider, SIM_BASE_ENV } from './settings';
import { planProducer } from './producer';
import { LedgerWatch } from './ledgerWatch';

const HOUR_MS = 3_600_000;
/** Faults are injected for this long (past the provider's 24 h key memory), then the world settles without them. */
export const FAULT_PHASE_MS = 30 * HOUR_MS;
/** The bound of `every-payment-settles`: the quiet phase after the faults stop, before the final checks. */
export const SETTLE_BOUND_MS = 24 * HOUR_MS;

export interface ScheduleOptions {
  readonly seed: number;
  /** Payments per schedule (default: 1 to 4, drawn from the seed). */
  readonly payments?: number;
  /** The faults the schedule may inject (default all). */
  readonly faults?: readonly FaultName[];
  readonly mutation?: Mutation;
  /** A directed schedule (scenarios.ts): its faults only, one payment. */
  readonly scenario?: ScenarioName;
  /**
   * The world the schedule runs in: 1, the world before issue 62 (the legacy provider, default settings, the operator
   * of then: the kept regression seeds and mutation seeds keep their schedules); 2 (default), provider profiles, drawn
   * settings, producers reusing ids, operators at every age of the key.
   */
  readonly world?: 1 | 2;
}

/** A run whose history grew this long has broken `history-bounded` many times over: the schedule stops there (its O(n^2) replays). */
const RUNAWAY_HISTORY_TASKS = 300;

export interface ScheduleResult {
  readonly seed: number;
  readonly payments: number;
  readonly faults: readonly FaultName[];
  /** The rates drawn (faults at 0 were not injected). */
  readonly rates: FaultRates;
  readonly lookup: 'none' | 'by-key';
  readonly scenario?: ScenarioName;
  readonly world: 1 | 2;
  /** The provider profile (world 2) and the settings drawn (those not at their default). */
  readonly profile: ProfileName;
  readonly settings: Readonly<Record<string, string>>;
  /** Setting combinations the app refused at start before this schedule's (each drawn again). */
  readonly refusedAtStart: number;
  /** Why the schedule did not run: the app refuses its settings at start whatever is drawn (its provider's declared timing). */
  readonly notRun?: string;
  readonly violations: Violation[];
  readonly trace: TraceLine[];
  /** Machine-independent cost: events run, store calls, Durable client calls, provider calls, deliveries. */
  readonly cost: { events: number; storeCalls: number; clientCalls: number; providerCalls: number; deliveries: number; episodes: number };
}

/** Runs one schedule: everything it does is decided by `seed` (and the options), so it replays exactly. */
export async function runSchedule(options: ScheduleOptions): Promise<ScheduleResult> {
  const stream = (purpose: string) => Random.of(options.seed, purpose);
  const allowed = new Set(options.faults ?? FAULT_NAMES);
  // Every draw is made whatever the options, so that `--payments` and `--faults` narrow this very schedule (a replay).
  const scenario = options.scenario ? SCENARIOS[options.scenario] : undefined;
  const rates = Object.fromEntries(
    FAULT_NAMES.map((name) => [name, stream(`rate:${name}`).pick(FAULTS[name])]).map(([name, rate]) => [
      name,
      allowed.has(name as FaultName) && !scenario ? rate : 0,
    ]),
  ) as FaultRates;
  const version = scenario ? ((scenario as Scenario).world ?? 1) : (options.world ?? 2);
  const drawnLookup = stream('lookup').chance(0.5) ? 'by-key' : 'none';
  const drawnPayments = stream('payments').int(1, 4);
  const paymentCount = scenario ? 1 : (options.payments ?? drawnPayments);
  const world = new World(Date.UTC(2026, 0, 1));
  // World 2: the provider is a profile (its draws from their own streams), the settings drawn from the schema's ranges.
  let provider: ProviderWorld | undefined;
  let drawn = { values: {} as Readonly<Record<string, string>>, refusedAtStart: 0 };
  if (version === 2) {
    const profileDrawn = drawProviderWorld(stream('provider-profile'), world.startMs, FAULT_PHASE_MS);
    provider = (scenario as Scenario | undefined)?.provider?.(profileDrawn) ?? profileDrawn;
    const declared = declaredFromProvider(provider);
    if (!scenario) drawn = drawSettings((n) => stream(`settings#${n}`), { ...SIM_BASE_ENV, ...declared });
    drawn = { ...drawn, values: { ...declared, ...drawn.values } };
  }
  const lookup = provider ? (drawn.values.PAYMENT_PROVIDER_LOOKUP as 'none' | 'by-key') : (scenario?.lookup ?? drawnLookup);
  const settings = { ...drawn.values, ...(scenario as Scenario | undefined)?.settings };
  // Settings the app refuses at start are no schedule (a scenario's, or a profile's declaration no draw could fit): the
  // defect cannot happen (its fix may be that refusal). Reported in the trace, nothing broken.
  const refusal = startRefusal({ ...SIM_BASE_ENV, PAYMENT_PROVIDER_LOOKUP: lookup, ...settings });
  if (refusal) {
    world.log(`the app refuses the settings at start: ${refusal}`.slice(0, 400));
    const none = { events: 0, storeCalls: 0, clientCalls: 0, providerCalls: 0, deliveries: 0, episodes: 0 };
    const profile = provider?.profile.name ?? 'legacy';
    return {
      seed: options.seed,
      payments: 0,
      faults: [...allowed],
      rates,
      lookup,
      scenario: options.scenario,
      world: version,
      profile,
      settings,
      refusedAtStart: drawn.refusedAtStart + 1,
      notRun: refusal,
      violations: [],
      trace: world.trace,
      cost: none,
    };
  }
  const app = new SimApp(world, stream('app'), rates, lookup, options.mutation, settings, provider, stream('provider-draws'));
  // World 2: the app's ledger check with the expiry timer (an observer: it draws nothing from the schedule's streams).
  const ledger = version === 2 ? new LedgerWatch(app, options.mutation) : undefined;
  const plan = stream('plan');
  const faultEnd = world.startMs + FAULT_PHASE_MS;
  if (rates['table-forbidden'] > 0) {
    const fromMs = world.startMs + plan.logBetween(1_000, FAULT_PHASE_MS / 2);
    app.store.setForbidden({ fromMs, toMs: fromMs + plan.logBetween(60_000, 12 * HOUR_MS) });
  }
  if (rates['provider-outage'] > 0) {
    const fromMs = world.startMs + plan.logBetween(1_000, FAULT_PHASE_MS / 2);
    app.provider.setOutage({ fromMs, toMs: fromMs + plan.logBetween(5 * 60_000, 3 * HOUR_MS) });
  }
  const payments: string[] = [];
  for (let n = 1; n <= paymentCount; n++) {
    const paymentId = `p${n}`;
    payments.push(paymentId);
    const decline = plan.chance(0.15) && !scenario;
    const body = { paymentId, customerId: decline ? 'decline-1' : `cust-${n}`, amount: 100 * plan.int(1, 50), currency: 'EUR' };
    app.steps.sent.set(paymentId, [body]);
    scenario?.script(app, world, paymentId);
    world.at(world.startMs + plan.logBetween(1, 60_000), () => void app.bus.send(paymentId, body));
    // A resend inside the window the app covers (message TTL + deliveries + resubmit margin: retention is checked
    // against it at start); later, the same paymentId is a new payment by contract (a key reused after expiry).
    if (plan.chance(rates['sb-resend']))
      world.at(world.startMs + plan.logBetween(1_000, redeliveryWindow(app.settings).totalMs), () => void app.bus.send(paymentId, body));
    if (plan.chance(rates['df-terminate'])) {
      world.at(world.startMs + plan.logBetween(1_000, FAULT_PHASE_MS), () => {
        const id = app.instanceOf(paymentId);
        if (id) app.hub.terminate(id, 'terminated by an operator');
      });
    }
    if (plan.chance(rates['df-suspend'])) {
      const atMs = world.startMs + plan.logBetween(1_000, FAULT_PHASE_MS);
      const resumeAfterMs = plan.chance(0.5) ? plan.logBetween(60_000, 10 * HOUR_MS) : undefined;
      world.at(atMs, () => {
        const id = app.instanceOf(paymentId);
        if (!id) return;
        app.hub.suspend(id);
        if (resumeAfterMs !== undefined) world.at(world.nowMs() + resumeAfterMs, () => app.hub.resume(id));
      });
    }
  }
  // World 2: producers that reuse a payment id for another payment (before and after its record's expiry, inside and
  // past the provider's key memory), each drawn from its own stream.
  if (version === 2 && !scenario) planProducer(app, world, stream('producer'), payments, world.startMs + FAULT_PHASE_MS + SETTLE_BOUND_MS);
  // The operator: each failed or held payment alerted is retried later (a held one after checking at the provider), or
  // left as it is: hours later in world 1; in world 2 at any age of the key (a minute to two days), from its own stream.
  const operatorDraws = version === 2 ? stream('operator') : plan;
  const retryDelayMs = () => (version === 2 ? operatorDraws.logBetween(60_000, 48 * HOUR_MS) : plan.logBetween(HOUR_MS, 24 * HOUR_MS));
  const handled = new Set<string>();
  const operator = () => {
    if (scenario) return; // a scenario's operator acts in its script
    for (const line of app.telemetry.logs) {
      const key = line.attributes.idempotencyKey;
      if (typeof key !== 'string' || handled.has(key) || (line.attributes.outcome !== 'failed' && line.attributes.outcome !== 'held')) continue;
      handled.add(key);
      const held = line.attributes.outcome === 'held';
      if (operatorDraws.chance(0.5)) world.at(world.nowMs() + retryDelayMs(), () => void app.operatorRetry(key, held));
    }
  };
  // The expiry timer: every 15 minutes while faults last (late or skipped under `timer-late`), then hourly.
  const end = faultEnd + SETTLE_BOUND_MS + app.retentionMs + 2 * HOUR_MS;
  const violations: Violation[] = [];
  const tick = (atMs: number) => {
    world.at(atMs, () => {
      const quiet = world.nowMs() >= faultEnd;
      const next = atMs + (quiet ? HOUR_MS : 15 * 60_000);
      if (next < end) tick(next);
      if (!quiet && plan.chance(rates['timer-late'])) {
        if (plan.chance(0.5)) return; // skipped: the next run is the past-due one
        world.at(world.nowMs() + plan.logBetween(60_000, 2 * HOUR_MS), () => void app.tick());
        return;
      }
      app.observe();
      operator();
      void app.tick();
      void ledger?.tick();
    });
  };
  tick(world.startMs + 15 * 60_000);
  world.at(faultEnd, () => {
    app.quiet();
    world.log('faults stop');
  });
  await world.runUntil(end, () => app.hub.longestHistory.tasks > RUNAWAY_HISTORY_TASKS);
  app.observe();
  // A schedule stopped for a runaway history ends early: its end checks (every payment settled, runs finished) would
  // only restate `history-bounded`.
  const runaway = app.hub.longestHistory.tasks > RUNAWAY_HISTORY_TASKS;
  violations.push(...checkInvariants(app, payments, { final: !runaway, boundMs: SETTLE_BOUND_MS, nowMs: world.nowMs() }));
  if (ledger && !runaway) {
    // The check caught up to its window's end (as its next ticks would), then judged against the provider's ledger.
    for (let catchUp = 0; catchUp < 20 && ledger.checkedUntilMs < world.nowMs() - ledger.delayMs - 1; catchUp++) await ledger.tick(1_000);
    violations.push(...ledger.unreported());
  }
  const premise = scenario?.premise(app, payments[0]);
  if (premise) violations.push({ invariant: 'scenario-premise', detail: `${options.scenario}: ${premise}` });
  return {
    seed: options.seed,
    payments: paymentCount,
    faults: [...allowed],
    rates,
    lookup,
    scenario: options.scenario,
    world: version,
    profile: app.provider.profileWorld.profile.name,
    settings,
    refusedAtStart: drawn.refusedAtStart,
    violations,
    trace: world.trace,
    cost: {
      events: world.steps,
      storeCalls: app.store.calls,
      clientCalls: app.client.calls,
      providerCalls: app.provider.calls.length,
      deliveries: app.bus.deliveries,
      episodes: app.hub.counts.episodes,
    },
  };
}
