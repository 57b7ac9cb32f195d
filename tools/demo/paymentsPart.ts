import type { ProviderLookup } from '../../src/payments/providerLookup';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';
import type { QueueMessage } from '../local/LocalQueue';
import { startPaymentsRig, type PaymentsRig } from '../local/paymentsRig';
import { CrashPoint } from './faults';
import type { SendTag } from './ledger';
import { sendsOf, type ChaosEnvironment, type ChaosPart, type PartTimePhase } from './part';
import { buildPaymentsWorkload, type LogicalMessage } from './paymentsWorkload';
import type { ProviderHandle } from './providerLedger';
import { loadSettings } from '../../src/config/settings';
import type { RetryBudget } from '../../src/payments/chargeOrchestration';
import { handedOffInstances, resolveHandOffs, type EntityOutcomes, type FinalResults } from './paymentsHandOff';
import { PART, readResults, forEachLimit } from './paymentsChecks';
import { verifyPayments } from './paymentsVerify';
import { type PaymentsPhaseState, HeldPayments, sweepToTheEnd } from './paymentsTimePhase';
import { systemClock } from 'azure-functions-idempotency';
import { demoLedgerCheck } from './ledgerCheckPart';
import { liveRunsSource } from './liveRunsSource';
import { reconcileOnce } from './reconcileAtEnd';
import { recordMistakes, type DemoMutation } from './mutations';

export interface PaymentsPartOptions {
  readonly messages: number;
  readonly duplicateRate: number;
  readonly provider: ProviderHandle;
  /** Lease of a claim; a delivery waits at most 80 % of it. */
  readonly leaseMs: number;
  readonly providerTimeoutMs: number;
  /** The time phase (docs/demo.md): payments held for an operator, a jump past retention, the sweep, DLQ resubmission, reused keys after expiry. */
  readonly timePhase?: boolean;
  /** At most this many Durable host kills after a charge (each costs a restart and the queues' 1 min visibility timeout). */
  readonly maxHostKills?: number;
  /** `PAYMENT_PROVIDER_LOOKUP` and `PAYMENT_PROVIDER_KEY_MEMORY_HOURS` (default the settings': `none`, 24). */
  readonly providerLookup?: ProviderLookup;
  readonly providerKeyMemoryHours?: number;
  /** A deliberate mistake (`--mutate`): the ledger check must show its discrepancies. */
  readonly mutation?: DemoMutation;
}

/** Retention of the dedup records: the time phase jumps past it. */
const RETENTION_MS = 30 * 86_400_000;
/** The demo's handoff retry budget: 10 min of durable-timer retries (1 s doubling to 10 s) before a payment ends `failed`. */
const DEMO_RETRY: RetryBudget = { budgetMs: 600_000, firstDelayMs: 1_000, maxDelayMs: 10_000, callLeaseMs: 10_000 };

/**
 * The payments consumer in the chaos run: the real handler (through the rig) with crashes injected before and after
 * the claim, after the provider charged (Durable host crash, replayed) and before the claim is completed; its seeded
 * workload; and its invariants (docs/demo.md): each chargeable payment charged exactly once with its own amount
 * (`effectiveCharges == chargeable - chargeableAwaitingOperator`), nothing else charged, malformed and reused-key
 * messages parked with their reason, nothing lost (a reuse whose original was dead-lettered is withheld, reported).
 */
export async function startPaymentsPart(env: ChaosEnvironment, options: PaymentsPartOptions): Promise<ChaosPart> {
  // An external provider is long-lived and has its own decline rules: give this run's paymentIds a
  // tag of their own and send no `decline*` customers (only the demo's fake provider declines those).
  const external = options.provider.fake === undefined;
  const workload = buildPaymentsWorkload({
    messages: options.messages,
    duplicateRate: options.duplicateRate,
    seed: env.seed,
    timePhase: options.timePhase ?? false,
    ...(external ? { declineShare: 0, runTag: Date.now().toString(36) } : {}),
  });
  const hostKills = { count: 0 };
  /** Records the app's reconciler restarted once the runs were drained (reconcileAtEnd.ts). */
  let reconciledAtEnd = 0;
  // The environment's `PAYMENTS_DESIGN`, else `handoff`.
  const settings = loadSettings({ PAYMENTS_DESIGN: process.env.PAYMENTS_DESIGN, IDEMPOTENCY_TABLE_CONNECTION_STRING: env.tableConnectionString });
  const design = settings.PAYMENTS_DESIGN;
  const rig = await startPaymentsRig({
    tableConnectionString: env.tableConnectionString,
    durableTableConnectionString: env.directTableConnectionString,
    providerUrl: options.provider.url,
    providerTimeoutMs: options.providerTimeoutMs,
    leaseMs: options.leaseMs,
    retentionMs: RETENTION_MS,
    clock: env.clock,
    design,
    providerLookup: options.providerLookup,
    providerKeyMemoryHours: options.providerKeyMemoryHours,
    retry: DEMO_RETRY,
    restartDelayMs: 100,
    // The functions as registered, invoked as the host does, the charge run by the real Durable engine (the Durable
    // Task extension and its Azure Storage provider); host crashes are SIGKILLs of the host after the provider
    // charged (the engine runs the activity again after the restart), a bounded number per run.
    durable: 'real',
    killHostAfterCharge: (paymentId) =>
      hostKills.count < (options.maxHostKills ?? 2) && env.faults.shouldCrash(CrashPoint.AfterCharge, `${paymentId}#host`) && ++hostKills.count > 0,
  });
  const held = new HeldPayments(workload.messages);
  // The store's own methods, before the crash injection wraps them (`--mutate` rewrites records with them, uncrashed).
  const plainStore = {
    get: rig.store.get.bind(rig.store),
    reopen: rig.store.reopen.bind(rig.store),
    claim: rig.store.claim.bind(rig.store),
    complete: rig.store.complete.bind(rig.store),
  };
  injectStoreCrashes(rig, env, held);
  /** `--mutate`: the records rewritten (once, before the ledger check first covers their charges). */
  let mistakes: Awaited<ReturnType<typeof recordMistakes>> | undefined;
  const makeMistakes = async () => {
    if (options.mutation && !mistakes) mistakes = await recordMistakes(plainStore, options.mutation, workload.messages);
  };
  // The ledger check under every guard, over the whole run, on the provider's clock (an external one's is real time).
  const ledgerCheck = demoLedgerCheck({
    providerUrl: options.provider.url,
    table: rig.store.client,
    store: rig.store,
    clock: external ? systemClock : env.clock,
    retry: DEMO_RETRY,
    retentionMs: RETENTION_MS,
  });
  /** Handoff: the records' results read before the time phase's sweep (a record swept since still answered its deliveries). */
  const resultsBeforeSweep: FinalResults = new Map();
  const deliver = async (body: unknown, meta: Parameters<typeof rig.deliver>[1]): Promise<PaymentDeliveryResult> => {
    const result = await rig.deliver(body, meta);
    if (result.outcome === 'handedOff') {
      // Handoff's own crash points after the start: a held payment fails before its ack (the run charged it), and
      // the consumer may die before the ack (the redelivery finds the orchestration started).
      const paymentId = String(meta.messageId);
      held.afterHandOff(paymentId);
      env.faults.maybeCrash(CrashPoint.BeforeComplete, paymentId);
    }
    return result;
  };

  const send = (message: LogicalMessage, copy: number): QueueMessage<SendTag> => ({
    messageId: message.messageId,
    body: message.body,
    correlationId: `chaos-${env.seed}`,
    tag: { part: PART, index: message.index, copy },
  });
  const copiesOf = (m: LogicalMessage) => Array.from({ length: 1 + m.extraCopies }, (_, copy) => send(m, copy));
  const waiting = new Map<number, LogicalMessage[]>();
  const withheld = new Set<number>();
  for (const message of workload.messages) {
    if (message.kind !== 'reusedKey') continue;
    waiting.set(message.reusesIndex!, [...(waiting.get(message.reusesIndex!) ?? []), message]);
  }
  const phase: PaymentsPhaseState = { ran: false, withheldReuses: new Set() };

  const timePhase: PartTimePhase | undefined = options.timePhase
    ? {
        expiresWithinMs: RETENTION_MS + options.leaseMs,
        ready: (ledger) => held.all.every((m) => ledger.fate(PART, m.index).deadLettered.length > 0),
        fix: () => {
          held.fixed = true;
          phase.ran = true;
        },
        beforeJump: async () => {
          // Handoff: the runs own the records; let them finish, and note what they recorded, before the jump.
          await rig.workflow.drain();
          await readResults(rig, workload.messages, resultsBeforeSweep);
          // The charges before the jump are checked now: the sweep removes their records (past retention on the demo's clock).
          await makeMistakes();
          await ledgerCheck.catchUp();
        },
        sweep: (holds) => {
          // The reconciler's hold on the records of runs still going, as the app's timer keeps it (liveRunsSource.ts).
          const unfinished = async () => new Set(rig.backend?.kind === 'real' ? (await rig.backend.store.unfinishedRuns()).keys() : []);
          const live = liveRunsSource(rig.store.client, unfinished, { partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT, nowMs: () => env.clock.nowMs() });
          return sweepToTheEnd(new ExpirySweeper(rig.store.client, { budgetMs: 60_000, clock: env.clock, holds: [...holds, live], holdMs: RETENTION_MS }));
        },
        sendsAfterSweep(ledger) {
          // A reuse is sent only when every copy of its original completed before the jump (so no
          // copy of the original can meet the reuse's record); otherwise it is withheld (reported).
          const out: QueueMessage<SendTag>[] = [];
          for (const m of workload.messages.filter((x) => x.kind === 'reusedAfterExpiry')) {
            const original = workload.messages[m.reusesIndex!];
            const fate = ledger.fate(PART, original.index);
            const settledBefore =
              fate.copiesSent === 1 + original.extraCopies &&
              fate.completions.length === fate.copiesSent &&
              fate.completionEpochs.every((e) => e === 0) &&
              fate.deadLettered.length === 0 &&
              fate.resubmitted === 0;
            if (settledBefore) out.push(...copiesOf(m));
            else {
              withheld.add(m.index);
              phase.withheldReuses.add(m.index);
            }
          }
          return out;
        },
      }
    : undefined;

  return {
    consumer: { name: PART, queue: PART, deliver },
    initialSends: workload.sends.map((s) => send(workload.messages[s.index], s.copy)),
    plannedSends: sendsOf(workload.messages),
    sendsAfterSettled(index, settled) {
      const released = waiting.get(index) ?? [];
      waiting.delete(index);
      if (settled === 'deadLettered') {
        // The key's first use was never processed: its "reuse" would be the key's first use. Not sent.
        for (const m of released) withheld.add(m.index);
        return [];
      }
      return released.flatMap(copiesOf);
    },
    withheldSends: () => sendsOf([...withheld].map((i) => workload.messages[i])),
    // Handoff: the bus is idle while runs still wait on a retry timer or a crash restart; let them finish first
    // (stop() alone would drop their pending timers and leave them unfinished).
    drain: async () => {
      await rig.workflow.drain();
      // The app's reconciler, once, as its timer would within 15 minutes: a record left in progress by a run that ended
      // (a takeover that met a run still going across the jump) is restarted; then its run is drained too.
      if (design === 'handoff' && rig.backend?.kind === 'real') {
        const report = await reconcileOnce({
          settings: rig.settings,
          tables: rig.tables,
          clock: env.clock,
          clientBindingData: rig.backend.engine.clientBindingData,
        });
        reconciledAtEnd = 'skipped' in report ? 0 : report.resolved.length;
        await rig.workflow.drain();
      }
      await rig.workflow.stop();
    },
    close: async () => rig.close?.(),
    verify: async (ledger) => {
      const current: FinalResults = new Map();
      await readResults(rig, workload.messages, current);
      // Outcomes the lifetimes' entities hold, for acknowledgements whose record the time phase's jump swept mid-run.
      const entities: EntityOutcomes = new Map();
      await forEachLimit(handedOffInstances(ledger, PART, workload.messages), 8, async (instanceId) => {
        const state = await rig.workflow.entityState(instanceId.replace(/^payment-/, '')).catch(() => undefined);
        if (state?.status === 'completed') entities.set(instanceId, state.result);
        else if (state?.status === 'failed') entities.set(instanceId, { status: 'failed', reason: state.reason });
      });
      const fromEntity = new Set<number>();
      const resolved = resolveHandOffs(ledger, PART, workload.messages, resultsBeforeSweep, current, entities, fromEntity);
      const report = await verifyPayments(
        rig,
        workload.messages,
        resolved,
        options.provider,
        withheld,
        options.timePhase ? { ...phase, held } : undefined,
        design,
      );
      await makeMistakes();
      await ledgerCheck.catchUp();
      const checked = ledgerCheck.report();
      const ledgerViolations = checked.discrepancies.map(
        (d) => `ledger check: charge ${d.chargeId} of ${d.paymentId || '(no key)'} is not held by a succeeded record (${d.reason}: ${d.detail})`,
      );
      return {
        ...report,
        violations: [...report.violations, ...ledgerViolations],
        details: {
          ...report.details,
          outcomesFromEntityAfterSweep: fromEntity.size,
          reconciledAtEnd,
          ledgerCheck: checked.offered ? 'list' : 'not offered',
          ledgerChecked: checked.checked,
          ledgerMatched: checked.matched,
          ledgerDiscrepancies: checked.discrepancies.length,
          ledgerUndecided: checked.undecided,
          ledgerPages: checked.pages,
          ledgerTicks: checked.ticks,
          ledgerFailedTicks: checked.failedTicks,
          ...(mistakes ? { mutatedPayments: mistakes.paymentIds.join(' ') } : {}),
        },
      };
    },
    ...(timePhase ? { timePhase } : {}),
  };
}

/** Crashes before/after the claim and before completing it, by wrapping the rig's store; and the held payments' failures. */
function injectStoreCrashes(rig: PaymentsRig, env: ChaosEnvironment, held: HeldPayments): void {
  const store = rig.store;
  const claim = store.claim.bind(store);
  const complete = store.complete.bind(store);
  store.claim = async (key, digest, claimOptions) => {
    held.beforeClaim(key.key);
    env.faults.maybeCrash(CrashPoint.BeforeClaim, key.key);
    const outcome = await claim(key, digest, claimOptions);
    if (outcome.kind === 'claimed' || outcome.kind === 'reclaimed') env.faults.maybeCrash(CrashPoint.AfterClaim, key.key);
    return outcome;
  };
  store.complete = async (claimed, result, effects, completeOptions) => {
    env.faults.maybeCrash(CrashPoint.BeforeComplete, claimed.key.key);
    held.beforeComplete(claimed.key.key);
    return complete(claimed, result, effects, completeOptions);
  };
}
