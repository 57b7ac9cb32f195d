import { AzuriteTable } from '../azurite/AzuriteTable';
import { CosmosEmulator } from '../cosmos/CosmosEmulator';
import { JumpClock } from '../local/JumpClock';
import { LocalServiceBus } from '../local/LocalServiceBus';
import type { LocalQueue } from '../local/LocalQueue';
import { deadLetterKeysSource, MAX_HELD_DEAD_LETTERS } from '../../src/lifecycle/deadLetterKeys';
import type { HeldKeysSource } from 'azure-functions-idempotency/table';
import { TcpProxy } from '../local/TcpProxy';
import { HOST_MAX_AUTO_LOCK_RENEWAL_MS } from '../../src/messaging/storeOutage';
import { CrashPoint, FaultPlan, InjectedCrash, SLOW_HANDLER } from './faults';
import { Ledger, type SendTag } from './ledger';
import type { ChaosEnvironment, ChaosPart, PartReport } from './part';
import { startOrdersPart } from './ordersPart';
import { startPaymentsPart } from './paymentsPart';
import { startProvider } from './providerLedger';
import { startRewardsPart, withRewards } from './rewardsPart';
import type { TimePhaseReport, ChaosProgress, ChaosReport } from './chaosReport';
import { type ChaosOptions, defaultProviderLookup, defaultDeclaredKeyMemoryHours, DEFAULT_CHAOS_OPTIONS } from './chaosOptions';
import { buildReport, type PaymentsPhaseFigures, phaseReport, formatDuration, copyId } from './buildReport';

/**
 * Runs the chaos scenario end to end on this machine (docs/demo.md): Azurite behind a TCP proxy (storage outages),
 * the provider, the Cosmos emulator, the parts (payments, orders, rewards) on a local Service Bus with competing
 * receivers and faults at every step; sends the seeded workload, waits until every message is settled, drains
 * background work, verifies, stops all.
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
          mutation: o.mutation,
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
