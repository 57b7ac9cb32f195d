import type { TableClient, TransactionAction } from '@azure/data-tables';
import type { Settings } from '../config/settings';
import { systemClock, type Clock, DEFAULT_STORE_TIMEOUT_MS, withDeadline, ConfigurationError } from 'azure-functions-idempotency';
import { toDomainError } from 'azure-functions-idempotency/table';

const DAY_MS = 86_400_000;
/** Kept beyond the hub's retention: clock skew, a sweep that runs late, a batch retried at the edge of retention. */
export const REPLAY_MARGIN_DAYS = 1;
/** Rows per query page and deletes per transaction (the service's limits: 1,000 and 100). */
const PAGE_SIZE = 1000;
const TRANSACTION_ROWS = 100;

/**
 * How long the rewards markers (a customer's applied-event rows and the consumer's identity rows) must live after
 * they were written: what can still replay an event is the hub, for its retention (`REWARDS_EVENT_HUB_RETENTION_DAYS`,
 * the Bicep's `eventHubRetentionDays`), counted from the event's enqueue, which is before the marker's write.
 * Call once at start (the rewards registration and the expiry timer do).
 * @throws ConfigurationError when `REWARDS_MARKER_RETENTION_DAYS` is shorter than the hub's retention + 1 day: a
 *   replay would then find its marker gone and apply the event a second time; or when the hub's cleanup policy
 *   (`REWARDS_EVENT_HUB_CLEANUP_POLICY`, from the deployed hub) is not `Delete` (compaction: no time limit).
 * @returns the retention, in ms.
 */
export function assertMarkersOutliveReplay(
  settings: Pick<Settings, 'REWARDS_EVENT_HUB_RETENTION_DAYS' | 'REWARDS_MARKER_RETENTION_DAYS'> & Partial<Pick<Settings, 'REWARDS_EVENT_HUB_CLEANUP_POLICY'>>,
): number {
  const policy = settings.REWARDS_EVENT_HUB_CLEANUP_POLICY ?? 'Delete';
  if (policy !== 'Delete') {
    throw new ConfigurationError(
      `REWARDS_EVENT_HUB_CLEANUP_POLICY is ${policy}: a compacted hub keeps the latest event of each key with no time limit, so an ` +
        'event can be read again after any marker retention and would apply twice; deploy the hub with cleanupPolicy Delete',
    );
  }
  const needed = settings.REWARDS_EVENT_HUB_RETENTION_DAYS + REPLAY_MARGIN_DAYS;
  if (settings.REWARDS_MARKER_RETENTION_DAYS < needed) {
    throw new ConfigurationError(
      `REWARDS_MARKER_RETENTION_DAYS (${settings.REWARDS_MARKER_RETENTION_DAYS} days) is shorter than what can replay an event: ` +
        `REWARDS_EVENT_HUB_RETENTION_DAYS (${settings.REWARDS_EVENT_HUB_RETENTION_DAYS} days) + ${REPLAY_MARGIN_DAYS} day; raise it to at least ${needed}`,
    );
  }
  return Math.round(settings.REWARDS_MARKER_RETENTION_DAYS * DAY_MS);
}

/** What one sweep of the rewards table did. */
export interface RewardMarkerSweep {
  /** Marker and identity rows past retention the queries returned. */
  readonly scanned: number;
  readonly deleted: number;
  /** Storage requests sent (query pages, transactions). */
  readonly requests: number;
  readonly stoppedByBudget: boolean;
  /** It started at the checkpoint the last run left (not at the first row). */
  readonly resumed: boolean;
}

export interface RewardMarkerSweepOptions {
  /** Rows written at or before this time (epoch ms) go. */
  readonly cutoffMs: number;
  /** Time the run may take; it stops after the page in hand. */
  readonly budgetMs: number;
  readonly clock?: Clock;
  readonly callTimeoutMs?: number;
}

/**
 * Deletes the rewards markers past retention: the rows `kind` `reward-event` (a customer's partition) and
 * `reward-identity` (the identity index) whose `appliedAtMs` is at or before the cutoff; never a balance row. Rows
 * are queried with a server-side filter (one scan of the table per run, pages of 1,000) and deleted in
 * transactions of up to 100 per partition; a transaction that finds a row gone (an overlapping sweep) is retried
 * without it by the next run. A table that does not exist (rewards not deployed) has nothing to sweep.
 * @throws StoreUnavailableError or StoreRequestError (the run fails; the next tick starts again).
 */
export async function sweepRewardMarkers(client: TableClient, options: RewardMarkerSweepOptions): Promise<RewardMarkerSweep> {
  const filter = `(kind eq 'reward-event' or kind eq 'reward-identity') and appliedAtMs le ${Math.floor(options.cutoffMs)}L`;
  return sweepRowsMatching(client, filter, options, 'RewardMarkers', MARKERS_CHECKPOINT);
}

/**
 * The markers sweep's checkpoint, a row of the rewards table (its `kind` is never a marker's): the continuation of
 * the query where the last run stopped. In Azure a filtered query walks every row of the table in key order, the
 * customers' partitions (`c-*`) before the identity index (`i-*`), and may answer pages with no rows: a run that
 * started over each time could spend every budget on the same first rows and never reach the identity partitions.
 */
const MARKERS_CHECKPOINT = { partitionKey: 'sweep-state', rowKey: 'reward-markers', kind: 'sweep-checkpoint' } as const;

async function readCheckpoint(client: TableClient, timeoutMs: number): Promise<string | undefined> {
  try {
    const row = await withDeadline(timeoutMs, 'readSweepCheckpoint', 'read', (abortSignal) =>
      client.getEntity<{ continuationToken?: unknown }>(MARKERS_CHECKPOINT.partitionKey, MARKERS_CHECKPOINT.rowKey, { abortSignal }),
    );
    return typeof row.continuationToken === 'string' && row.continuationToken !== '' ? row.continuationToken : undefined;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return undefined; // no checkpoint (or no table: nothing to sweep)
    throw toDomainError(error, 'readSweepCheckpoint', 'read');
  }
}

/** Saves where the next run starts (`''`: at the beginning, the last scan having reached the end). */
async function writeCheckpoint(client: TableClient, continuationToken: string, nowMs: number, timeoutMs: number): Promise<void> {
  const entity = { ...MARKERS_CHECKPOINT, continuationToken, savedAtMs: { value: String(Math.floor(nowMs)), type: 'Int64' } };
  try {
    await withDeadline(timeoutMs, 'writeSweepCheckpoint', 'write', (abortSignal) => client.upsertEntity(entity, 'Replace', { abortSignal }));
  } catch (error) {
    throw toDomainError(error, 'writeSweepCheckpoint', 'write');
  }
}

/**
 * Deletes a stream consumer's failure-strike rows (partition `partitionKey` of the parking table, written only when
 * a batch fails: `src/messaging/failureStrikes.ts`) last struck at or before the cutoff. A strike counts retries of one
 * batch, which the hub can hold no longer than its retention: past the markers' retention a row counts nothing. The
 * parked events in the same table are never touched (other partitions).
 */
export async function sweepFailureStrikes(client: TableClient, partitionKey: string, options: RewardMarkerSweepOptions): Promise<RewardMarkerSweep> {
  const filter = `PartitionKey eq '${partitionKey.replace(/'/g, "''")}' and lastAtMs le ${Math.floor(options.cutoffMs)}L`;
  return sweepRowsMatching(client, filter, options, 'FailureStrikes');
}

/**
 * Queries the rows matching `filter` (keys only, pages of 1,000) and deletes them in transactions per partition. With
 * `checkpoint`, it starts where the last run stopped and saves where it stops (after each page).
 */
async function sweepRowsMatching(
  client: TableClient,
  filter: string,
  options: RewardMarkerSweepOptions,
  what: string,
  checkpoint?: typeof MARKERS_CHECKPOINT,
): Promise<RewardMarkerSweep> {
  const clock = options.clock ?? systemClock;
  const timeoutMs = options.callTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  const startedMs = clock.nowMs();
  let scanned = 0;
  let deleted = 0;
  let requests = 0;
  let continuationToken: string | undefined = checkpoint ? await readCheckpoint(client, timeoutMs) : undefined;
  const resumed = continuationToken !== undefined;
  do {
    if (clock.nowMs() - startedMs >= options.budgetMs) return { scanned, deleted, requests, stoppedByBudget: true, resumed };
    let page: Array<{ partitionKey: string; rowKey: string }>;
    try {
      requests++;
      const pages = client.listEntities({ queryOptions: { filter, select: ['PartitionKey', 'RowKey'] } }).byPage({ maxPageSize: PAGE_SIZE, continuationToken });
      const next = await withDeadline(timeoutMs, `query${what}`, 'read', () => pages.next());
      if (next.done) break;
      page = next.value.map((row) => ({ partitionKey: String(row.partitionKey), rowKey: String(row.rowKey) }));
      continuationToken = next.value.continuationToken;
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return { scanned, deleted, requests, stoppedByBudget: false, resumed };
      throw toDomainError(error, `query${what}`, 'read');
    }
    scanned += page.length;
    const byPartition = new Map<string, string[]>();
    for (const row of page) byPartition.set(row.partitionKey, [...(byPartition.get(row.partitionKey) ?? []), row.rowKey]);
    for (const [partitionKey, rowKeys] of byPartition) {
      for (let i = 0; i < rowKeys.length; i += TRANSACTION_ROWS) {
        const actions = rowKeys.slice(i, i + TRANSACTION_ROWS).map((rowKey): TransactionAction => ['delete', { partitionKey, rowKey }]);
        requests++;
        try {
          await withDeadline(timeoutMs, `delete${what}`, 'write', (abortSignal) => client.submitTransaction(actions, { abortSignal }));
          deleted += actions.length;
        } catch (error) {
          // A row already gone fails its transaction (404): another sweep got there first; the rest go next run.
          if ((error as { statusCode?: number }).statusCode !== 404) throw toDomainError(error, `delete${what}`, 'write');
        }
      }
    }
    if (checkpoint && (continuationToken !== undefined || resumed)) {
      requests++;
      await writeCheckpoint(client, continuationToken ?? '', clock.nowMs(), timeoutMs);
    }
  } while (continuationToken);
  return { scanned, deleted, requests, stoppedByBudget: false, resumed };
}
