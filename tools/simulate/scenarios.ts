import type { SimApp } from './app';
import { PROVIDER_SCENARIOS } from './scenariosProvider';
import type { ChargeActivityInput } from '../../src/payments/chargeInputs';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/**
 * Directed schedules: the faults of one defect the review found, placed at the moments that make it happen, with no
 * random fault (the simulator's machinery, the app's code, the same invariants). Random search reaches these only
 * rarely (each needs three or four faults in a row); a scenario makes the schedule certain, and keeps it.
 */
export type { Scenario } from './scenarioTypes';
import type { Scenario } from './scenarioTypes';

/** The time the payment was first recorded `failed`, if it was. */
const failedAt = (app: SimApp, paymentId: string) => app.steps.completions.find((c) => c.key === paymentId && c.result.status === 'failed')?.atMs;

export const SCENARIOS = {
  'key-memory': {
    description:
      'a charge whose answer is lost, then a provider outage past the retry budget (the payment ends failed); the operator retries it 21.5 h after the claim (inside 90 % of the 24 h key memory) and its activity waits 3 h in the work-item queue: the call reaches the provider at about 24.5 h',
    lookup: 'none',
    script(app, world, paymentId) {
      app.provider.forceLostAnswers = 1;
      app.provider.afterCharge = () => {
        app.provider.afterCharge = undefined;
        app.provider.setOutage({ fromMs: world.nowMs(), toMs: world.nowMs() + 2 * HOUR_MS });
      };
      world.at(world.startMs + 21.5 * HOUR_MS, () => {
        app.hub.forceActivityWait = { fromMs: world.nowMs(), waitMs: 3 * HOUR_MS };
        void app.operatorRetry(paymentId, false);
      });
    },
    premise(app, paymentId) {
      const failed = failedAt(app, paymentId);
      if (failed === undefined || failed > app.world.startMs + 21.5 * HOUR_MS) return 'the payment was not recorded failed before the operator retried it';
      if (!app.retried.has(paymentId)) return 'the operator did not retry it';
      const late = app.hub.activityRuns.some((r) => r.atMs >= app.world.startMs + 24 * HOUR_MS);
      return late ? undefined : "no activity of the retry's run ran past the key memory (24 h)";
    },
  },
  'revive-failed': {
    description:
      "a provider outage past the retry budget (the payment ends failed, alerted); the reconciler lists the record in progress, then its run's status read takes 20 min (the task hub's storage is slow), and the run records failed and completes in between",
    lookup: 'by-key',
    script(app, world) {
      app.provider.setOutage({ fromMs: world.startMs, toMs: world.startMs + 75 * MINUTE_MS });
      app.client.forceSlow = { fromMs: world.startMs + 40 * MINUTE_MS, toMs: world.startMs + 56 * MINUTE_MS, callMs: 20 * MINUTE_MS };
    },
    premise(app, paymentId) {
      const failed = failedAt(app, paymentId);
      if (failed === undefined) return 'the payment was never recorded failed (the schedule shows nothing about reviving one)';
      return app.client.slowCalls > 0 ? undefined : "no Durable client call was slowed (the reconciler's status read did not straddle the failure)";
    },
  },
  'stale-duplicate': {
    description:
      'a host dies after the episode that sends the first chargeProvider work item and before it writes its history: the episode runs again and sends a second copy; the first copy waits 3 h in the queue; a provider outage fails the run past its budget (alerted), then the waiting copy runs',
    lookup: 'none',
    script(app, world) {
      app.provider.setOutage({ fromMs: world.startMs, toMs: world.startMs + 2 * HOUR_MS });
      app.hub.forceRestartOnActivity = 1;
      app.hub.forceActivityWait = { fromMs: world.startMs, waitMs: 3 * HOUR_MS, count: 1 };
    },
    premise(app, paymentId) {
      const failed = failedAt(app, paymentId);
      if (failed === undefined) return 'the payment was never recorded failed';
      if (app.hub.forceRestartOnActivity > 0) return 'the host restart that sends the copy did not happen';
      const copy = app.hub.activityRuns.some((r) => r.name === 'chargeProvider' && r.atMs > failed);
      return copy ? undefined : 'no chargeProvider copy ran after the payment was recorded failed';
    },
  },
  'duplicate-start': {
    description:
      "a delivery claims and its start takes 90 s to reach the task hub (past the client's 15 s deadline; the call lands anyway): the delivery rides the timeout out, finds no run, takes its lapsed record over (attempt 2) and starts again; attempt 1's start is pending (its first episode waits 10 min) and the task hub accepts attempt 2's start and drops it (check-then-act): attempt 1's run is fenced before the provider; the reconciler restarts it (attempt 3)",
    lookup: 'none',
    script(app) {
      app.client.forceStartHopMs.push(90_000, 60_000);
      app.hub.forceStartWaitMs = 10 * MINUTE_MS;
      app.hub.forceDuplicateStart = 1;
    },
    premise(app) {
      return app.hub.droppedStarts.some((d) => d.attempt === 2) ? undefined : 'no start of attempt 2 was dropped by the task hub';
    },
  },
  'refused-start': {
    description:
      "issue 51 item 4: as duplicate-start, but the task hub refuses attempt 2's start (attempt 1's run is pending: its first episode waits 10 min): the delivery holding attempt 2 must not end the payment with attempt 1's fenced output (a silent failed); it waits for that run, then starts its own",
    lookup: 'none',
    script(app) {
      app.client.forceStartHopMs.push(90_000, 60_000);
      app.hub.forceStartWaitMs = 10 * MINUTE_MS;
      const startNew = app.client.startNew.bind(app.client);
      app.client.startNew = (name, options) =>
        startNew(name, options).catch((error: unknown) => {
          app.scriptSaw.push(`start refused: attempt ${(options.input as { attempt?: number }).attempt}`);
          throw error;
        });
    },
    premise(app) {
      return app.scriptSaw.includes('start refused: attempt 2') ? undefined : 'no start of attempt 2 was refused by the task hub';
    },
  },
  'host-dies-starting': {
    description:
      "issue 51 item 4 as it happens: the host running the first delivery dies 2 s in, its start call on the way (the call takes until the record is taken over); the message comes back when its lock expires, the new delivery finds no run, takes the lapsed record over (attempt 2) and starts: attempt 1's start has landed just before, so the task hub refuses attempt 2's. Attempt 1's run is fenced (not charged: the record moved on); the delivery must not record that as the payment's result (a failed nobody is told about) but wait for the run, then start its own",
    lookup: 'none',
    script(app, world, paymentId) {
      app.bus.forceCrashAfterMs.push(2_000);
      let takenOver: () => void = () => undefined;
      const overtaken = new Promise<void>((resolve) => (takenOver = resolve));
      const onWrite = app.store.onWrite;
      app.store.onWrite = (operation) => {
        onWrite?.(operation);
        if ((app.record(paymentId)?.attempt ?? 0) >= 2) takenOver();
      };
      const startNew = app.client.startNew.bind(app.client);
      app.client.startNew = async (name, options) => {
        const attempt = (options.input as { attempt?: number }).attempt;
        if (attempt === 1) await overtaken; // the call on its way until the record is taken over
        app.scriptSaw.push(`start sent: attempt ${attempt}`);
        return startNew(name, options).catch((error: unknown) => {
          app.scriptSaw.push(`start refused: attempt ${attempt}`);
          throw error;
        });
      };
      void world;
    },
    premise(app) {
      if (app.bus.hostCrashes === 0) return "the first delivery's host did not die";
      return app.scriptSaw.includes('start refused: attempt 2') ? undefined : 'no start of attempt 2 was refused by the task hub';
    },
  },
  'record-write-outage': {
    description:
      "the consumer's table refuses every request (403: a role assignment removed) from the moment the provider charges, for 20 h: the run retries its record write on durable timers (5 min cap, about 240 tries) until the role is back",
    lookup: 'none',
    script(app, world) {
      app.provider.afterCharge = () => {
        app.provider.afterCharge = undefined;
        app.store.setForbidden({ fromMs: world.nowMs(), toMs: world.nowMs() + 20 * HOUR_MS });
      };
    },
    premise(app, paymentId) {
      if (app.hub.counts.continuedAsNew === 0) return 'the run never continued as new (the outage did not outlast 20 record-write tries)';
      const completed = app.steps.completions.find((c) => c.key === paymentId);
      return completed?.result.status === 'succeeded' ? undefined : 'the payment was not recorded succeeded after the outage';
    },
  },
  'begin-resent': {
    description:
      "issue 51 item 5: the host dies after the run's first episode sent the entity's begin and before its history: the episode runs again and sends begin again (a new request id: the entity applies it twice); the first provider call then waits 22 h in the work-item queue (past 90 % of the provider's 24 h key memory, no look-up)",
    lookup: 'none',
    script(app, world) {
      app.hub.forceRestartOnEntity = 1;
      app.hub.forceActivityWait = { fromMs: world.startMs, waitMs: 22 * HOUR_MS, count: 1 };
    },
    premise(app) {
      if (app.hub.forceRestartOnEntity > 0) return "the host restart after the begin's episode did not happen";
      const late = app.hub.activityRuns.some((r) => r.name === 'chargeProvider' && r.atMs >= app.world.startMs + 22 * HOUR_MS);
      return late ? undefined : 'no provider call waited 22 h';
    },
  },
  'fence-window': {
    description:
      "issue 51 item 1: a provider outage past the retry budget (retry delays capped at 60 s, a team's setting); the run's settling look-up finds no charge and records failed; the last round's work item, answered, runs again (its delete failed: 2^6 s) while the table refuses requests (403): a fence that fails open for a fresh round lets it charge",
    settings: { PAYMENT_RETRY_MAX_DELAY_SECONDS: '60' },
    lookup: 'by-key',
    script(app, world) {
      app.provider.setOutage({ fromMs: world.startMs, toMs: world.startMs + 10 * HOUR_MS });
      let last: ((delayMs: number) => void) | undefined;
      let lastAtMs = 0;
      app.hub.activityHook = (at, name, input, again) => {
        const call = input as ChargeActivityInput;
        if (name !== 'chargeProvider' || call.hold) return;
        if (at === 'answered' && !call.lookUpOnly && !app.scriptSaw.includes('settle')) [last, lastAtMs] = [again, world.nowMs()];
        if (at !== 'start' || !call.lookUpOnly || !last || app.scriptSaw.includes('settle')) return;
        app.scriptSaw.push('settle');
        app.provider.setOutage({ fromMs: world.startMs, toMs: world.nowMs() });
        const copyAtMs = Math.max(world.nowMs() + 5_000, lastAtMs + 64_000);
        app.store.setForbidden({ fromMs: copyAtMs - 1_000, toMs: copyAtMs + 60_000 });
        last(copyAtMs - world.nowMs());
        world.at(copyAtMs, () => app.scriptSaw.push(`copy ${copyAtMs - lastAtMs}`));
      };
    },
    premise(app, paymentId) {
      const failed = failedAt(app, paymentId);
      if (failed === undefined) return 'the payment was never recorded failed';
      const copy = app.scriptSaw.find((saw) => saw.startsWith('copy '));
      if (!copy) return "the last round's work item did not run again";
      const copyRan = app.hub.activityRuns.some((r) => r.name === 'chargeProvider' && r.atMs > failed);
      return copyRan ? undefined : 'the copy did not run after the payment was recorded failed';
    },
  },
  'fence-race': {
    description:
      "issue 51 item 2, no fault but timing: a provider outage past the retry budget; the run's settling look-up finds no charge and sends its failed write, which takes a moment to land; meanwhile the last round's work item runs again (its delete failed), reads the record in progress and charges",
    lookup: 'by-key',
    script(app, world) {
      app.provider.setOutage({ fromMs: world.startMs, toMs: world.startMs + 10 * HOUR_MS });
      let last: ((delayMs: number) => void) | undefined;
      let settling = false;
      app.hub.activityHook = (at, name, input, again) => {
        const call = input as ChargeActivityInput;
        if (name !== 'chargeProvider' || call.hold) return;
        if (at === 'answered' && !call.lookUpOnly && !settling) last = again;
        if (at !== 'start' || !call.lookUpOnly || !last || settling) return;
        settling = true;
        app.provider.setOutage({ fromMs: world.startMs, toMs: world.nowMs() });
      };
      // The settle's write reaches the store: the copy runs now, and the write lands once the copy charged (or 5 s).
      app.store.onArrival = async (operation) => {
        if (operation !== 'complete' || !settling || !last || app.scriptSaw.includes('copy')) return;
        app.scriptSaw.push('copy');
        const landed = new Promise<void>((resolve) => {
          app.provider.afterCharge = () => resolve();
          world.at(world.nowMs() + 5_000, resolve);
        });
        last(0);
        await landed;
        app.provider.afterCharge = undefined;
      };
    },
    premise(app, paymentId) {
      if (!app.scriptSaw.includes('copy')) return "the last round's work item did not run again during the settle's write";
      const settled = app.steps.completions.some((c) => c.key === paymentId);
      return settled ? undefined : 'the payment was never settled';
    },
  },
  ...PROVIDER_SCENARIOS,
} satisfies Record<string, Scenario>;

export type ScenarioName = keyof typeof SCENARIOS;

/** The scenario's `awaitsFix` marker, if it has one. */
export const awaitsFixOf = (scenario: Scenario): string | undefined => scenario.awaitsFix;
export const SCENARIO_NAMES = Object.keys(SCENARIOS) as ScenarioName[];
