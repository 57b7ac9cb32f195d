import { TableClient } from '@azure/data-tables';
import { rewardsFromSettings, rewardsHandler } from '../../src/app/rewards';
import { registerRewardsFunction, REWARDS_FUNCTION } from '../../src/app/rewardsFunction';
import { loadSettings } from '../../src/config/settings';
import { toNumber } from 'azure-functions-idempotency/internal';
import { pointsFor } from '../../src/rewards/rewardEvent';
import { AzuriteBlob } from '../azurite/AzuriteBlob';
import { delay as sleep, mulberry32 } from '../fakeProvider/random';
import { BlobCheckpointStore } from '../local/eventHubs/BlobCheckpointStore';
import { LocalEventHub } from '../local/eventHubs/LocalEventHub';
import { LocalEventHubsHost, type BatchHandler } from '../local/eventHubs/LocalEventHubsHost';
import { workerBatchHandler } from '../local/eventHubs/workerBatch';
import { WorkerHost } from '../local/host/WorkerHost';
import { localHubSink } from '../producer/eventSinks';
import { buildRewardsPlan, expectedBalances } from '../producer/rewardEvents';
import type { ChaosReport } from './chaosReport';
import type { ChaosEnvironment, PartReport } from './part';

export interface RewardsPartOptions {
  /** Distinct PaymentSucceeded events the producer sends. */
  readonly events: number;
  /** Chance that a host crashes after the function returned a batch and before its checkpoint (then it is replaced). */
  readonly crashRate: number;
}

/** The rewards part of a chaos run: started beside the queue consumers, finished and checked after them. */
export interface RewardsPart {
  /** Lets the producer send the first `fraction` (0-1) of its events: the run paces it, so its events meet the run's faults. */
  produceUpTo(fraction: number): void;
  /** Waits until the producer is done and every partition is checkpointed at its end (at most until `deadlineMs`). */
  finish(deadlineMs: number): Promise<void>;
  /** Every customer's balance against the points of the distinct events the hub holds. */
  verify(): Promise<PartReport>;
  stop(): Promise<void>;
}

const HUB_PARTITIONS = 4;

/**
 * The demo's rewards part (docs/demo.md, "Rewards on Event Hubs in the chaos run"): the app's `rewardsConsumer` as
 * the worker invokes it, on the local Event Hubs behind the run's storage proxy; two hosts that crash before their
 * checkpoints; an independent producer (the CLI's plan). Invariant: every customer's balance = the points of its
 * distinct events, counted from what the hub actually holds.
 */
export async function startRewardsPart(env: ChaosEnvironment, options: RewardsPartOptions): Promise<RewardsPart> {
  const blobs = await AzuriteBlob.start();
  const hub = new LocalEventHub(`rewards${env.seed}`, HUB_PARTITIONS);
  const checkpoints = new BlobCheckpointStore(blobs.connectionString, hub.namespace, hub.name, 'rewards');
  await checkpoints.ensureContainer();
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: env.tableConnectionString,
    REWARDS_TABLE_NAME: 'demorewards',
    PARKED_TABLE_NAME: 'demorewardsparked',
  });
  const direct = (name: string) => TableClient.fromConnectionString(env.directTableConnectionString, name, { allowInsecureConnection: true });
  for (const name of [settings.REWARDS_TABLE_NAME, settings.PARKED_TABLE_NAME]) await direct(name).createTable();

  const random = mulberry32(env.seed ^ 0x5e3d);
  const stats = { batches: 0, failures: 0, applied: 0, duplicates: 0, replays: 0, parked: 0, hostCrashes: 0 };
  const ownersByPartition = new Map<string, Set<string>>();
  let hosts: LocalEventHubsHost[] = [];
  let stopped = false;
  const newHost = (): LocalEventHubsHost => {
    const invoke = workerBatchHandler(
      WorkerHost.load(() => registerRewardsFunction(rewardsHandler(rewardsFromSettings(settings)))),
      REWARDS_FUNCTION,
    );
    const handler: BatchHandler = async (bodies, context) => {
      stats.batches++;
      let report: { applied: number; duplicates: number; replays: number; parked: number };
      try {
        report = (await invoke(bodies, context)) as typeof report;
      } catch (error) {
        stats.failures++; // a storage outage: the host runs the batch again (retry forever)
        throw error;
      }
      stats.applied += report.applied;
      stats.duplicates += report.duplicates;
      stats.replays += report.replays;
      stats.parked += report.parked;
      const partitionId = (context.triggerMetadata.partitionContext as { partitionId: string }).partitionId;
      (ownersByPartition.get(partitionId) ?? ownersByPartition.set(partitionId, new Set()).get(partitionId)!).add(host.ownerId);
      if (!stopped && random() < options.crashRate) {
        stats.hostCrashes++;
        void host.crash(); // after the function returned, before the checkpoint: the next owner replays the batch
        hosts[hosts.indexOf(host)] = newHost();
      }
      return report;
    };
    const host: LocalEventHubsHost = new LocalEventHubsHost(hub, checkpoints, handler, () => hosts.length, {
      ownershipExpiryMs: 400,
      maxBatchSize: 8,
      retryDelayMs: 100,
    });
    return host.start();
  };
  hosts = [newHost(), newHost()];

  // The independent producer: its own plan and pace, over the run.
  const plan = buildRewardsPlan({
    count: options.events,
    customers: 12,
    retries: 1,
    retryShare: 0.2, // sent twice: a retry after a lost acknowledgement
    idPrefix: `pay-${env.seed}`,
    customerPrefix: 'cust',
    source: '/payments',
    currency: 'EUR',
    mode: 'structured',
    seed: env.seed,
  });
  const sink = localHubSink(hub);
  let allowed = 0; // events the producer may have sent so far (produceUpTo)
  const producer = (async () => {
    for (const [i, event] of plan.entries()) {
      while (i >= allowed) await sleep(25);
      await sink.send(event);
      if (i % 10 === 9) await sleep(20);
    }
  })();

  const caughtUp = () => checkpoints.caughtUpWith(hub);
  let finished = false;

  return {
    produceUpTo(fraction) {
      allowed = Math.max(allowed, Math.ceil(Math.min(1, fraction) * plan.length));
    },
    async finish(deadlineMs) {
      allowed = plan.length;
      await producer;
      while (Date.now() < deadlineMs) {
        if (await caughtUp().catch(() => false)) {
          finished = true;
          break;
        }
        await sleep(50);
      }
      stopped = true;
      await Promise.all(hosts.map((h) => h.crash()));
    },
    async verify() {
      const produced = producedByHub(hub);
      const planned = expectedBalances(plan);
      const balances = new Map<string, number>();
      for await (const row of direct(settings.REWARDS_TABLE_NAME).listEntities<{ customerId?: string; points?: unknown }>({
        queryOptions: { filter: "RowKey eq 'balance'" },
      }))
        balances.set(String(row.customerId), toNumber(row.points));
      const short: string[] = [];
      const over: string[] = [];
      const violations: string[] = [];
      for (const customer of new Set([...produced.balances.keys(), ...balances.keys()])) {
        const expected = produced.balances.get(customer) ?? 0;
        const actual = balances.get(customer) ?? 0;
        if (actual < expected) short.push(`${customer}: balance ${actual}, its distinct events give ${expected}`);
        if (actual > expected) over.push(customer);
        if (actual > expected) violations.push(`${customer}: balance ${actual} > ${expected}, the points of its distinct events (an event counted twice)`);
      }
      if (!finished) violations.push('the hosts did not reach the end of the hub before the run timed out');
      if (short.length > 0) violations.push(`${short.length} customer(s) short of their events' points: ${short.slice(0, 5).join('; ')}`);
      if (!sameBalances(planned, produced.balances)) violations.push("the hub does not hold the producer's events (a send was lost before the consumer)");
      const moved = [...ownersByPartition.values()].filter((owners) => owners.size > 1).length;
      return {
        name: 'rewards',
        messages: produced.distinct,
        unique: produced.distinct,
        duplicatesDetected: stats.duplicates,
        parkedByReason: Object.fromEntries(stats.parked > 0 ? [['parked', stats.parked]] : []),
        lostMessages: short,
        doubleEffects: over,
        violations,
        details: {
          appended: produced.appended,
          producerRetries: produced.appended - produced.distinct,
          customers: produced.balances.size,
          balancesMatching: [...produced.balances].filter(([c, points]) => (balances.get(c) ?? 0) === points).length,
          batches: stats.batches,
          batchFailures: stats.failures,
          hostCrashes: stats.hostCrashes,
          partitionsMoved: moved,
          applied: stats.applied,
          duplicates: stats.duplicates,
          replays: stats.replays,
        },
      };
    },
    async stop() {
      stopped = true;
      await Promise.all(hosts.map((h) => h.crash()));
      await blobs.stop();
    },
  };
}

/** The run's report with the rewards part's verdict added (its violations prefixed `rewards:`). */
export function withRewards(report: ChaosReport, rewards: PartReport | undefined): ChaosReport {
  if (!rewards) return report;
  const violations = [...report.violations, ...rewards.violations.map((v) => `rewards: ${v}`)];
  return { ...report, ok: violations.length === 0, violations, parts: [...report.parts, rewards] };
}

/** What the hub holds: events appended, distinct payments (CloudEvent ids) and each customer's points from them. */
function producedByHub(hub: LocalEventHub): { appended: number; distinct: number; balances: Map<string, number> } {
  const seen = new Set<string>();
  const balances = new Map<string, number>();
  let appended = 0;
  for (const event of hub.partitions.flat()) {
    appended++;
    const body = event.body as { id?: string; data?: { customerId: string; amount: number } };
    if (!body.id || !body.data || seen.has(body.id)) continue;
    seen.add(body.id);
    balances.set(body.data.customerId, (balances.get(body.data.customerId) ?? 0) + pointsFor(body.data.amount));
  }
  return { appended, distinct: seen.size, balances };
}

function sameBalances(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}
