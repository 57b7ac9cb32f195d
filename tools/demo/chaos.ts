import { AzuriteTable } from '../azurite/AzuriteTable';
import type { ProviderLookup } from '../../src/payments/providerLookup';
import { CosmosEmulator } from '../cosmos/CosmosEmulator';
import { JumpClock } from '../local/JumpClock';
import { LocalServiceBus } from '../local/LocalServiceBus';
import type { LocalQueue } from '../local/LocalQueue';
import { deadLetterKeysSource, MAX_HELD_DEAD_LETTERS } from '../../src/lifecycle/deadLetterKeys';
import type { HeldKeysSource } from '../../src/lifecycle/heldRecords';
import { TcpProxy } from '../local/TcpProxy';
import { HOST_MAX_AUTO_LOCK_RENEWAL_MS } from '../../src/messaging/storeOutage';
import { CRASH_POINTS, CrashPoint, FaultPlan, InjectedCrash, SLOW_HANDLER } from './faults';
import { Ledger, type SendTag } from './ledger';
import { emptyPartSweep, type ChaosEnvironment, type ChaosPart, type PartReport, type PartSweepReport } from './part';
import { startOrdersPart } from './ordersPart';
import { startPaymentsPart } from './paymentsPart';
import { startProvider } from './providerLedger';
import { startRewardsPart, withRewards } from './rewardsPart';

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

/** The time phase's figures (payments): the jump, the sweep, the resubmissions, the reused keys after expiry. */
export interface TimePhaseReport {
  /** Completed deliveries (all queues) when it ran, and the run's elapsed time then. */
  readonly atCompleted: number;
  readonly atElapsedMs: number;
  /** How far the consumers' clock jumped (retention + lease + 1 minute). */
  readonly jumpedMs: number;
  /** Messages still in the queue (waiting or locked) at the jump: their time to live ran out, so they were dead-lettered. */
  readonly expiredAtJump: number;
  /** Whether the sweep kept the records of dead-lettered payments. */
  readonly sweepHold: boolean;
  readonly sweep: PartSweepReport;
  readonly sweepMs: number;
  /** Payments held for an operator (dead-lettered before the phase), and those charged before their DLQ. */
  readonly heldForOperator: number;
  readonly heldChargedBeforeDlq: number;
  /** Dead-lettered copies resubmitted after the sweep, and what became of their messages. */
  readonly resubmitted: number;
  readonly resubmittedMessages: number;
  readonly resubmittedCompleted: number;
  readonly resubmittedParked: number;
  /** Resubmitted messages that never completed (dead-lettered again or unsettled): an invariant failure. */
  readonly resubmittedStuck: number;
  /** Reused keys after expiry: planned, sent, withheld (original not settled before the jump). */
  readonly reusedAfterExpiry: number;
  readonly reusedAfterExpirySent: number;
  readonly reusedAfterExpiryWithheld: number;
  /** Sent ones: refused by the provider (rejected; of which 422), charged for their own amount, parked key-reused. */
  readonly reusedAfterExpiryRejected: number;
  readonly reusedAfterExpiryRejected422: number;
  readonly reusedAfterExpiryCharged: number;
  readonly reusedAfterExpiryParked: number;
  /** Ordinary reused-key messages delivered after the sweep and processed as new payments. */
  readonly reusedKeysProcessedAsNewAfterExpiry: number;
  /** Keys whose record is neither completed nor swept while no message of theirs is in the DLQ (must be 0). */
  readonly leftInProgress: number;
  /** Local rows (Payment rows) left without their marker at the end (must be 0: the sweep deletes them with it). */
  readonly orphanLocalRows: number;
}

/** A snapshot while the run goes on. */
export interface ChaosProgress {
  readonly elapsedMs: number;
  readonly sent: number;
  readonly plannedSends: number;
  readonly deliveries: number;
  readonly completed: number;
  readonly redeliveries: number;
  readonly inFlight: number;
  readonly crashes: number;
  readonly deadLettered: number;
  readonly outage: boolean;
  /** Charges the demo's own provider made so far (undefined with an external provider). */
  readonly charges?: number;
  /** Set once, on the progress line of the time phase. */
  readonly phase?: string;
}

/** The run's figures and verdict; `ok` is false when an invariant failed (listed in `violations`). */
export interface ChaosReport {
  readonly ok: boolean;
  readonly violations: string[];
  readonly seed: number;
  readonly messages: number;
  readonly uniquePayments: number;
  readonly uniqueOrders: number;
  /** Logical messages per consumer (how `messages` was split). */
  readonly messagesByPart: Record<string, number>;
  /** Orders: order documents in the emulator's container at the end (each valid order at most once). */
  readonly ordersCreated: number;
  /** Orders: status changes the handler applied (a newer version written with If-Match). */
  readonly statusApplied: number;
  /** Orders: status changes the handler ignored as stale (older) or repeated (same version). */
  readonly staleVersionsIgnored: number;
  /** Orders: parked orders messages by reason. */
  readonly ordersParkedByReason: Record<string, number>;
  readonly sends: number;
  /** Extra copies the producer sent (accepted by the broker). */
  readonly producerDuplicates: number;
  /** Sends dropped by broker duplicate detection. */
  readonly brokerDropped: number;
  readonly deliveries: number;
  readonly redeliveries: number;
  /** producerDuplicates + redeliveries. */
  readonly duplicatesDelivered: number;
  /** Deliveries the consumers reported as duplicates. */
  readonly duplicatesDetected: number;
  readonly crashesInjected: number;
  readonly crashesByPoint: Record<CrashPoint, number>;
  /** Handlers stalled past their lock (then completing with a lock-lost error). */
  readonly slowHandlers: number;
  readonly providerFaults: Record<string, number>;
  /** The declared capability (`by-key, key memory 24 h`) and the provider's look-ups (`GET /v1/charges?idempotency_key=`; null: an external provider's are not counted). */
  readonly providerLookup: { readonly mode: string; readonly lookups: number | null };
  readonly storageOutages: number;
  readonly connectionsReset: number;
  readonly abandoned: number;
  readonly lockExpired: number;
  readonly lockLost: number;
  readonly deadLettered: number;
  readonly deadLetteredByReason: Record<string, number>;
  readonly deadLetteredMessages: Array<{ queue: string; messageId: string; deliveryCount: number; reason: string; lastError: string }>;
  readonly parked: number;
  readonly parkedByReason: Record<string, number>;
  readonly effectiveCharges: number;
  readonly effectiveChargesSource: string;
  readonly expectedCharges: number;
  readonly lost: number;
  readonly lostMessages: string[];
  readonly doubleCharged: number;
  /** The time phase's figures; null when it was off (or there were no payments). */
  readonly timePhase: TimePhaseReport | null;
  readonly parts: PartReport[];
  readonly elapsedMs: number;
}

/**
 * Runs the chaos scenario end to end on this machine and checks the invariants: starts Azurite
 * (in memory, free loopback port) behind a TCP proxy (storage outages), the fake provider (or uses
 * `providerUrl`) and the Cosmos emulator (in process, loopback), the consumers (`parts`: payments
 * and orders, `messages` split by `ordersShare`), a local Service Bus with N competing receivers per
 * queue and faults at every step; sends the seeded workload, waits until every message is settled,
 * drains background work, verifies, stops all.
 */
export async function runChaos(input: Partial<ChaosOptions> = {}): Promise<ChaosReport> {
  const o = { ...DEFAULT_CHAOS_OPTIONS, ...input };
  const started = Date.now();
  const faults = FaultPlan.uniform(o.seed, o.crashRate);
  const ledger = new Ledger();
  const clock = new JumpClock();
  const stops: Array<() => Promise<void>> = [];
  try {
    const azurite = await AzuriteTable.start();
    stops.push(() => azurite.stop());
    const proxy = await TcpProxy.start(azurite.port);
    stops.push(() => proxy.stop());
    const external = o.providerUrl !== undefined;
    const lookup = o.providerLookup ?? defaultProviderLookup(external);
    const keyMemoryHours = o.declaredKeyMemoryHours ?? defaultDeclaredKeyMemoryHours(external, o.providerKeyMemoryMs);
    const provider = await startProvider({
      externalUrl: o.providerUrl,
      faultRate: o.crashRate,
      seed: o.seed,
      keyMemoryMs: o.providerKeyMemoryMs,
      clock,
      lookup,
    });
    stops.push(() => provider.stop());
    const env: ChaosEnvironment = {
      tableConnectionString: azurite.connectionString.replace(`:${azurite.port}/`, `:${proxy.port}/`),
      directTableConnectionString: azurite.connectionString,
      faults,
      seed: o.seed,
      clock,
    };
    // The consumers of the run: payments and orders, each on its own queue of the same local Service Bus.
    const ordersMessages = Math.round(o.messages * o.ordersShare);
    const paymentsMessages = o.messages - ordersMessages;
    const parts: ChaosPart[] = [];
    if (paymentsMessages > 0) {
      parts.push(
        await startPaymentsPart(env, {
          messages: paymentsMessages,
          duplicateRate: o.duplicateRate,
          provider,
          leaseMs: o.leaseMs,
          providerTimeoutMs: 500,
          timePhase: o.timePhase,
          maxHostKills: o.maxHostKills,
          providerLookup: lookup,
          providerKeyMemoryHours: keyMemoryHours,
        }),
      );
    }
    if (ordersMessages > 0) {
      const cosmos = await CosmosEmulator.start();
      stops.push(() => cosmos.stop());
      parts.push(
        await startOrdersPart(env, {
          messages: ordersMessages,
          duplicateRate: o.duplicateRate,
          cosmosEndpoint: cosmos.endpoint,
          maxDeliveryCount: o.maxDeliveryCount,
        }),
      );
    }
    for (const part of parts) stops.push(async () => part.close?.());
    const rewards = o.rewardsEvents > 0 ? await startRewardsPart(env, { events: o.rewardsEvents, crashRate: Math.min(0.5, 2 * o.crashRate) }) : undefined;
    if (rewards) stops.push(() => rewards.stop());
    const byName = new Map(parts.map((p) => [p.consumer.name, p]));

    let sent = 0;
    const send = (queue: string, message: { tag?: SendTag } & Parameters<LocalServiceBus<SendTag>['send']>[1]) => {
      const accepted = bus.send(queue, message);
      ledger.recordSend(message.tag!, accepted);
      sent++;
    };
    const releaseAfter = (tag: SendTag, settled: 'completed' | 'deadLettered') => {
      const part = byName.get(tag.part)!;
      for (const message of part.sendsAfterSettled(tag.index, settled)) send(part.consumer.queue, message);
    };
    const bus: LocalServiceBus<SendTag> = new LocalServiceBus<SendTag>(
      {
        lockDurationMs: o.lockDurationMs,
        maxDeliveryCount: o.maxDeliveryCount,
        duplicateDetectionWindowMs: o.brokerDuplicateDetection ? 10 * 60_000 : 0,
        onDeadLetter: (dead) => {
          ledger.recordDeadLetter(dead);
          releaseAfter(dead.message.tag!, 'deadLettered');
        },
      },
      {
        isCrash: (error) => error instanceof InjectedCrash,
        loseAck: (locked) => faults.shouldCrash(CrashPoint.BeforeAck, copyId(locked.message.tag!)),
        // A few handlers stall past their lock: the message goes to another receiver meanwhile.
        stallBeforeHandler: (locked) => (faults.shouldCrash(SLOW_HANDLER, copyId(locked.message.tag!)) ? o.lockDurationMs + 100 : 0),
        // The Functions host renews a running delivery's lock up to host.json's maxAutoLockRenewalDuration: a
        // delivery that waits out a storage outage keeps its message (src/messaging/storeOutage.ts).
        autoRenewLock: { beforeExpiryMs: Math.min(10_000, o.lockDurationMs / 2), maxDurationMs: HOST_MAX_AUTO_LOCK_RENEWAL_MS },
        onDelivery: (event) => {
          ledger.recordDelivery(event);
          if (event.kind === 'completed') releaseAfter(event.locked.message.tag!, 'completed');
        },
      },
    );
    stops.unshift(() => bus.stop());
    for (const part of parts) bus.start(part.consumer, o.consumers);
    for (const part of parts) for (const message of part.initialSends) send(part.consumer.queue, message);
    const plannedSends = parts.reduce((sum, p) => sum + p.plannedSends, 0);

    // Wait until every planned message was sent and settled; cut storage at set points meanwhile.
    const outageAt = Array.from({ length: o.outages }, (_, i) => Math.floor(((i + 1) * plannedSends) / (o.outages + 1)));
    let outages = 0;
    let lastProgress = 0;
    const progress = (): ChaosProgress => ({
      elapsedMs: Date.now() - started,
      sent,
      plannedSends,
      deliveries: ledger.deliveries,
      completed: ledger.events.completed,
      redeliveries: ledger.redeliveries,
      inFlight: bus.inFlight,
      crashes: faults.total,
      deadLettered: bus.allQueues().reduce((sum, q) => sum + q.stats.deadLettered, 0),
      outage: proxy.cutNow,
      charges: provider.fake?.charges.length,
    });
    const withheld = () => parts.reduce((sum, p) => sum + p.withheldSends(), 0);
    // The time phase: at a set point (and once the held payments are in the DLQ, and storage is up).
    const phased = parts.filter((p) => p.timePhase);
    const phaseAt = Math.floor(o.timePhaseAt * plannedSends);
    let phase: Omit<TimePhaseReport, keyof PaymentsPhaseFigures> | undefined;
    const runTimePhase = async () => {
      const atElapsedMs = Date.now() - started;
      const atCompleted = ledger.events.completed;
      const jumpedMs = Math.max(...phased.map((p) => p.timePhase!.expiresWithinMs)) + 60_000;
      for (const p of phased) await p.timePhase!.beforeJump?.();
      ledger.epoch = 1;
      clock.jump(jumpedMs);
      for (const p of phased) p.timePhase!.fix();
      // A pause of 30 days outlives every message's time to live (14 days in Azure): what was still in the queue,
      // waiting or locked, is dead-lettered on expiration (our queues' setting), as Service Bus would have done.
      let expiredAtJump = 0;
      for (const p of phased) expiredAtJump += bus.queue(p.consumer.queue).expireAll();
      const sweepStarted = Date.now();
      const sweeps = [];
      for (const p of phased) sweeps.push(await p.timePhase!.sweep(o.sweepHold ? [localDeadLetterSource(bus.queue(p.consumer.queue), p.consumer.name)] : []));
      const sweepMs = Date.now() - sweepStarted;
      let resubmitted = 0;
      for (const p of phased) {
        for (const dead of bus.queue(p.consumer.queue).resubmitDeadLetters()) {
          ledger.recordResubmit(dead);
          resubmitted++;
        }
        for (const message of p.timePhase!.sendsAfterSweep(ledger)) send(p.consumer.queue, message);
      }
      phase = { atCompleted, atElapsedMs, jumpedMs, expiredAtJump, sweepHold: o.sweepHold, sweep: sweeps[0], sweepMs, resubmitted };
      o.onProgress?.({
        ...progress(),
        phase: `time phase: clock +${formatDuration(jumpedMs)}, sweep deleted ${sweeps[0].deleted} records (${sweeps[0].deletedLocalRows} local rows), ${resubmitted} resubmitted from the DLQ`,
      });
    };
    while (!(sent + withheld() >= plannedSends && bus.idle && !proxy.cutNow && (phase !== undefined || phased.length === 0))) {
      if (Date.now() - started > o.timeoutMs) break;
      // An outage due at the time phase's point cuts first (the phase waits for storage): it meets traffic in flight,
      // not the quiet queue the phase's drain leaves behind.
      if (outages < outageAt.length && ledger.events.completed >= outageAt[outages] && !proxy.cutNow) {
        outages++;
        proxy.cut();
        setTimeout(() => proxy.restore(), o.outageMs);
      }
      if (phase === undefined && phased.length > 0 && ledger.events.completed >= phaseAt && !proxy.cutNow && phased.every((p) => p.timePhase!.ready(ledger))) {
        await runTimePhase();
        continue;
      }
      rewards?.produceUpTo(ledger.events.completed / Math.max(1, plannedSends)); // its producer keeps pace with the run
      if (o.onProgress && Date.now() - lastProgress >= (o.progressEveryMs ?? 1_000)) {
        lastProgress = Date.now();
        o.onProgress(progress());
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await bus.stop();
    for (const part of parts) await part.drain();
    await rewards?.finish(Math.max(started + o.timeoutMs, Date.now() + 30_000));
    o.onProgress?.(progress());

    const reports: PartReport[] = [];
    for (const part of parts) reports.push(await part.verify(ledger));
    const timePhase = phased.length === 0 ? null : phaseReport(phase, reports);
    const declared = { mode: `${lookup}, key memory ${keyMemoryHours} h`, lookups: provider.fake ? provider.fake.lookups : null };
    const report = buildReport(
      o,
      reports,
      ledger,
      bus,
      faults,
      provider.fake?.faultsInjected ?? {},
      outages,
      proxy.resets,
      Date.now() - started,
      timePhase,
      declared,
    );
    return withRewards(report, await rewards?.verify());
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

function buildReport(
  o: { seed: number },
  parts: PartReport[],
  ledger: Ledger,
  bus: LocalServiceBus<SendTag>,
  faults: FaultPlan,
  providerFaults: Record<string, number>,
  storageOutages: number,
  connectionsReset: number,
  elapsedMs: number,
  timePhase: TimePhaseReport | null,
  providerLookup: ChaosReport['providerLookup'],
): ChaosReport {
  const payments = parts.find((p) => p.name === 'payments');
  const orders = parts.find((p) => p.name === 'orders');
  const queues = bus.allQueues();
  const sum = (f: (q: (typeof queues)[number]) => number) => queues.reduce((s, q) => s + f(q), 0);
  const messages = parts.reduce((s, p) => s + p.messages, 0);
  const sends = sum((q) => q.stats.sent);
  const deadLetteredMessages = queues.flatMap((q) =>
    q.deadLetters.map((d) => ({
      queue: q.name,
      messageId: typeof d.message.messageId === 'string' || typeof d.message.messageId === 'number' ? String(d.message.messageId) : '',
      deliveryCount: d.deliveryCount,
      reason: d.reason,
      lastError: d.lastError,
    })),
  );
  const deadLetteredByReason: Record<string, number> = {};
  for (const d of deadLetteredMessages) deadLetteredByReason[d.reason] = (deadLetteredByReason[d.reason] ?? 0) + 1;
  const parkedByReason: Record<string, number> = {};
  for (const part of parts) for (const [reason, n] of Object.entries(part.parkedByReason)) parkedByReason[`${part.name}:${reason}`] = n;
  const producerDuplicates = sends - countFirstCopies(ledger, parts);
  const lostMessages = parts.flatMap((p) => p.lostMessages.map((m) => `${p.name} ${m}`));
  const violations = parts.flatMap((p) => p.violations.map((v) => `${p.name}: ${v}`));
  const doubleCharged = payments?.doubleEffects.length ?? 0;
  if (lostMessages.length > 0) violations.push(`${lostMessages.length} message(s) lost`);
  if (doubleCharged > 0) violations.push(`${doubleCharged} payment(s) charged twice: ${payments!.doubleEffects.slice(0, 10).join(', ')}`);
  const pd = payments?.details ?? {};
  const od = orders?.details ?? {};
  if (timePhase && timePhase.atElapsedMs < 0) violations.push('the time phase never ran (the run timed out before it)');
  if (orders && orders.doubleEffects.length > 0)
    violations.push(`${orders.doubleEffects.length} order(s) created twice: ${orders.doubleEffects.slice(0, 10).join(', ')}`);
  return {
    ok: violations.length === 0,
    violations,
    seed: o.seed,
    messages,
    uniquePayments: payments?.unique ?? 0,
    uniqueOrders: orders?.unique ?? 0,
    messagesByPart: Object.fromEntries(parts.map((p) => [p.name, p.messages])),
    ordersCreated: Number(od.ordersCreated ?? 0),
    statusApplied: Number(od.statusApplied ?? 0),
    staleVersionsIgnored: Number(od.staleVersionsIgnored ?? 0),
    ordersParkedByReason: { ...(orders?.parkedByReason ?? {}) },
    sends,
    producerDuplicates,
    brokerDropped: sum((q) => q.stats.droppedAsDuplicate),
    deliveries: ledger.deliveries,
    redeliveries: ledger.redeliveries,
    duplicatesDelivered: producerDuplicates + ledger.redeliveries,
    duplicatesDetected: parts.reduce((s, p) => s + p.duplicatesDetected, 0),
    crashesInjected: faults.total,
    crashesByPoint: Object.fromEntries(CRASH_POINTS.map((p) => [p, faults.injected[p]])) as Record<CrashPoint, number>,
    slowHandlers: faults.injected.slowHandler,
    providerFaults,
    providerLookup,
    storageOutages,
    connectionsReset,
    abandoned: sum((q) => q.stats.abandoned),
    lockExpired: sum((q) => q.stats.lockExpired),
    lockLost: sum((q) => q.stats.lockLost),
    deadLettered: deadLetteredMessages.length,
    deadLetteredByReason,
    deadLetteredMessages,
    parked: Object.values(parkedByReason).reduce((s, n) => s + n, 0),
    parkedByReason,
    effectiveCharges: Number(pd.effectiveCharges ?? 0),
    effectiveChargesSource: typeof pd.effectiveChargesSource === 'string' ? pd.effectiveChargesSource : 'none',
    expectedCharges: Number(pd.expectedCharges ?? 0),
    lost: lostMessages.length,
    lostMessages,
    doubleCharged,
    timePhase,
    parts,
    elapsedMs,
  };
}

/** The payments part's own figures of the phase (`details.timePhase`). */
type PaymentsPhaseFigures = Omit<
  TimePhaseReport,
  'atCompleted' | 'atElapsedMs' | 'jumpedMs' | 'expiredAtJump' | 'sweepHold' | 'sweep' | 'sweepMs' | 'resubmitted'
>;

function phaseReport(phase: Omit<TimePhaseReport, keyof PaymentsPhaseFigures> | undefined, parts: PartReport[]): TimePhaseReport {
  const figures = (parts.find((p) => p.name === 'payments')?.details.timePhase ?? {}) as Partial<PaymentsPhaseFigures>;
  const n = (k: keyof PaymentsPhaseFigures) => Number(figures[k] ?? 0);
  return {
    ...(phase ?? { atCompleted: -1, atElapsedMs: -1, jumpedMs: 0, expiredAtJump: 0, sweepHold: false, sweep: emptyPartSweep(), sweepMs: 0, resubmitted: 0 }),
    heldForOperator: n('heldForOperator'),
    heldChargedBeforeDlq: n('heldChargedBeforeDlq'),
    resubmittedMessages: n('resubmittedMessages'),
    resubmittedCompleted: n('resubmittedCompleted'),
    resubmittedParked: n('resubmittedParked'),
    resubmittedStuck: n('resubmittedStuck'),
    reusedAfterExpiry: n('reusedAfterExpiry'),
    reusedAfterExpirySent: n('reusedAfterExpirySent'),
    reusedAfterExpiryWithheld: n('reusedAfterExpiryWithheld'),
    reusedAfterExpiryRejected: n('reusedAfterExpiryRejected'),
    reusedAfterExpiryRejected422: n('reusedAfterExpiryRejected422'),
    reusedAfterExpiryCharged: n('reusedAfterExpiryCharged'),
    reusedAfterExpiryParked: n('reusedAfterExpiryParked'),
    reusedKeysProcessedAsNewAfterExpiry: n('reusedKeysProcessedAsNewAfterExpiry'),
    leftInProgress: n('leftInProgress'),
    orphanLocalRows: n('orphanLocalRows'),
  };
}

/**
 * A local queue's dead-letter queue as the sweep's hold, read through the app's own `deadLetterKeysSource` (peeked
 * page by page, keys scoped by `consumer`), so the demo exercises the code the expiry timer runs.
 */
function localDeadLetterSource(queue: LocalQueue<SendTag>, consumer: string): HeldKeysSource {
  return deadLetterKeysSource({
    name: `${queue.name} dead-letter queue`,
    consumer,
    maxMessages: MAX_HELD_DEAD_LETTERS,
    open: async () => {
      const snapshot = queue.deadLetters.map((d) => ({ messageId: d.message.messageId }));
      let next = 0;
      return {
        peek: async (max) => snapshot.slice(next, (next += max)),
        close: async () => undefined,
      };
    },
  });
}

/** 2592060000 -> "30d 0h 1m". */
export function formatDuration(ms: number): string {
  const d = Math.floor(ms / 86_400_000);
  const h = Math.floor((ms % 86_400_000) / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${d}d ${h}h ${m}m${s ? ` ${s}s` : ''}`;
}

function copyId(tag: SendTag): string {
  return `${tag.part}:${tag.index}:${tag.copy}`;
}

/** Logical messages with at least one accepted send (their first accepted copy is not a duplicate). */
function countFirstCopies(ledger: Ledger, parts: PartReport[]): number {
  let n = 0;
  for (const part of parts) for (let i = 0; i < part.messages; i++) if (ledger.fate(part.name, i).copiesSent > 0) n++;
  return n;
}
