/**
 * `npm run bench:durable`'s counting on the real Durable engine (tools/durable-host): one small run of the holding
 * design, checked against what must hold on the wire whatever the machine's speed. Runs in series with the other
 * real-engine tests (the extension's port 17071 is taken under a machine-wide lock).
 */
import { runDesign } from '../../tools/bench/paymentsDesignRun';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';

const sum = (counts: Readonly<Record<string, number>>, prefix: string, suffix = '') =>
  Object.entries(counts)
    .filter(([k]) => k.startsWith(prefix) && k.endsWith(suffix))
    .reduce((a, [, n]) => a + n, 0);

describe('bench:durable on the real engine: both payments designs counted on the wire', () => {
  realEngineTest(
    'every payment charged once; claim 2 table transactions a payment; Durable queue messages put = deleted <= dequeued; Service Bus receive + complete each; idle polling only empty gets',
    async () => {
      const payments = 4;
      const run = await runDesign({ design: 'hold', payments, concurrency: 4, providerMs: 200, idleSeconds: 2, sparsePayments: 1, log: () => undefined });
      expect(run.providerCharges).toBe(payments);
      expect(run.unfinishedInstances).toBe(0);
      expect(run.failedInstances).toBe(0);

      const requests = run.storage.workload.requests;
      // The claim: one entity-group transaction to claim, one to complete (docs/performance.md: 2 round trips);
      // a delivery that outlives part of its lease also renews it (a merge): on a slow machine the holding design does.
      expect(sum(requests, 'app.', '.batch')).toBe(2 * payments);
      expect(sum(requests, 'app.')).toBe(sum(requests, 'app.', '.batch') + sum(requests, 'app.', '.merge'));
      // Every Durable queue message put during the workload was dequeued and deleted.
      const puts = sum(requests, 'durable.queue.', '.put');
      const dequeued = Object.values(run.storage.workload.dequeuedMessages).reduce((a, b) => a + b, 0);
      expect(puts).toBeGreaterThanOrEqual(6 * payments);
      // Deleted exactly once each; dequeued at least once (the engine may put a message back, e.g. for a busy
      // orchestration, and dequeue it again: seen once in 28 on a loaded machine).
      expect(sum(requests, 'durable.queue.', '.delete')).toBe(puts);
      expect(dequeued).toBeGreaterThanOrEqual(puts);
      expect(sum(requests, 'durable.table.History.')).toBeGreaterThan(0);
      expect(sum(requests, 'durable.table.Instances.')).toBeGreaterThan(0);

      // Idle: the pollers find nothing; every idle request is an empty dequeue.
      const idle = run.storage.idle.requests;
      expect(sum(idle, 'durable.queue.', '.emptyGet')).toBeGreaterThan(0);
      expect(sum(idle, '')).toBe(sum(idle, 'durable.queue.', '.emptyGet'));

      // Service Bus: one send, one receive, one complete a payment; nothing abandoned.
      expect(run.serviceBus).toMatchObject({ sends: payments, receives: payments, completes: payments, abandons: 0, deadLettered: 0 });
      // The holding design waits by polling: at least one status poll a payment, one start a payment.
      expect(run.statusPollsPerPayment).toBeGreaterThanOrEqual(1);
      expect(run.startsPerPayment).toBe(1);
      // Executions timed by the bridge: one provider activity a payment, the orchestration and entity around it.
      expect(run.durable.byFunction.chargeProvider).toBe(payments);
      expect(run.durable.executions).toBeGreaterThanOrEqual(7 * payments);
      expect(run.consumer.executions).toBe(payments);
      // Flex bills at least 1 s per active period: a payment alone bills >= 1 s on each side.
      expect(run.sparse.consumerActiveMsPerPayment).toBeGreaterThanOrEqual(1_000);
      expect(run.sparse.durableActiveMsPerPayment).toBeGreaterThanOrEqual(1_000);
      expect(run.telemetry.logRecords).toBeGreaterThanOrEqual(payments);
      expect(run.telemetry.logBytes).toBeGreaterThan(0);
    },
    REAL_ENGINE_TIMEOUT_MS,
  );

  realEngineTest(
    'the hand-off counted the same way: 0 status polls, 1 start a payment; the claim still 2 table transactions (the activity completes the record); the trigger acknowledges before the charge finishes',
    async () => {
      const payments = 4;
      const run = await runDesign({
        design: 'handoff',
        payments,
        concurrency: 4,
        providerMs: 1_000,
        idleSeconds: 1,
        sparsePayments: 1,
        splitPayments: 3,
        log: () => undefined,
      });
      expect(run.providerCharges).toBe(payments);
      expect(run.unfinishedInstances).toBe(0);
      expect(run.failedInstances).toBe(0);
      expect(run.statusPollsPerPayment).toBe(0);
      expect(run.startsPerPayment).toBe(1);
      const requests = run.storage.workload.requests;
      // The trigger claims, the charge activity reads the record and announces its call on it (its fence before the
      // call, a conditional lease renewal: src/payments/callFence.ts) and completes it once it has the provider's answer
      // (hand-off version 2: no completePaymentRecord activity unless that write fails): 2 entity-group transactions,
      // 1 point read and 1 conditional update, nothing held.
      expect(sum(requests, 'app.')).toBe(4 * payments);
      expect(sum(requests, 'app.', '.batch')).toBe(2 * payments);
      expect(run.durable.byFunction.chargeProvider).toBe(payments);
      expect(run.durable.byFunction.completePaymentRecord).toBeUndefined();
      expect(run.serviceBus).toMatchObject({ sends: payments, receives: payments, completes: payments, abandons: 0 });
      // A payment alone: the trigger returns before the provider (1 s) has answered.
      expect(Math.max(...run.sparse.consumerExecutionMs)).toBeLessThan(1_000);

      // The split phase: with the host a client only, the trigger claims (1 transaction) and starts (Instances,
      // control queue put); nothing of the hub runs (no History write, no queue message taken); the worker it becomes
      // then charges each of the 20 warm-up (5 s at 4/s) + 3 paced + 3 burst payments exactly once.
      const split = run.split!;
      expect(split.payments).toBe(26);
      expect(split.paced.warmupMs).toHaveLength(20);
      const trigger = split.triggerStoragePerMessage;
      expect(sum(trigger, 'app.')).toBe(1);
      expect(sum(trigger, 'durable.queue.', '.put')).toBe(1);
      expect(sum(trigger, 'durable.table.Instances.')).toBeGreaterThanOrEqual(1);
      expect(sum(trigger, 'durable.table.History.')).toBe(0);
      expect(sum(trigger, 'durable.queue.', '.delete')).toBe(0);
      expect(split.charged).toBe(26);
      expect(split.burst.cpuMsPerMessage.benchProcess).toBeGreaterThan(0);
      // The counting proxies ran in their own process, read apart; the worker host's memory was read.
      expect(split.burst.cpuMsPerMessage.counters).toBeGreaterThan(0);
      expect(split.memoryPeakMb?.durableHost).toBeGreaterThan(0);
      expect(split.paced.durationsMs).toHaveLength(3);
      expect(split.burst.durationsMs).toHaveLength(3);
    },
    REAL_ENGINE_TIMEOUT_MS,
  );
});
