import type { TableClient } from '@azure/data-tables';
import { systemClock, type Clock } from '../../../protocol/clock';
import { ConfigurationError } from '../../../protocol/errors';
import { isExpired } from '../../../protocol/recordRules';
import { DEFAULT_PARTITION_COUNT, partitionName, validatePartitionCount } from '../partitions';
import { holdRecords, type HeldAddress, type HeldKeysSource } from './heldRecords';
import { readSweepPosition, writeSweepPosition, type SweepPosition } from './sweepCheckpoint';
import { actionsOf, deleteExpired } from './sweepDelete';
import { expiredMarkersFilter, MAX_PAGE_SIZE, queryMarkers, type SweepCounts, type SweepRow } from './sweepQuery';

export { MAX_PAGE_SIZE } from './sweepQuery';
/** Most actions in one entity-group transaction. */
export const MAX_BATCH_SIZE = 100;

/**
 * Options of an {@link ExpirySweeper}. Only `budgetMs` is required; an out-of-range value throws
 * `ConfigurationError` from the constructor.
 */
export interface ExpirySweeperOptions {
  /** Partitions of the table: the `partitionCount` the store was given. Default 16. */
  readonly partitionCount?: number;
  /** Time one run may take, in ms (e.g. a little under the timer's period); it stops after the chunk in hand. */
  readonly budgetMs: number;
  /** What "now" is (the cutoff and the budget); the store's clock. Default `systemClock`. */
  readonly clock?: Clock;
  /** Rows per query page, at most 1000 (the default). */
  readonly pageSize?: number;
  /** Deletes per transaction, at most 100 (the default). */
  readonly batchSize?: number;
  /** RowKey of the checkpoint row under `sweep-state`; one per table. Default `expiry`. */
  readonly checkpointName?: string;
  /** Receives one summary line per run (counts only, never keys or payloads). */
  readonly log?: (message: string) => void;
  /**
   * Where held keys come from (messages not resolved yet, e.g. a dead-letter queue an operator may resubmit from):
   * their records are kept and their retention moved forward, whatever their age ({@link HeldKeysSource}). A source
   * that throws fails the run before anything is deleted.
   */
  readonly holds?: readonly HeldKeysSource[];
  /**
   * Required with `holds`: how long a held record must still live after a run, in ms (e.g. how long a resubmitted
   * copy can take to be delivered). A held record close to its end is moved to now + 2 x `holdMs`.
   */
  readonly holdMs?: number;
}

/** What one {@link ExpirySweeper.sweep} run did (counts only). `skipped` = `skippedLeased + skippedHeld + skippedChanged + alreadyDeleted`. */
export interface SweepReport {
  /** Held keys the sources listed (0 without `holds`; a key listed twice counts once). */
  readonly held: number;
  /** Held keys that had a record. */
  readonly heldWithRecord: number;
  /** Held records whose retention this run moved forward. */
  readonly heldExtended: number;
  /** Past retention but held (their retention could not be moved in time for this run's query): kept. */
  readonly skippedHeld: number;
  /** Rows past retention the queries returned (a row scanned again after a restart counts again). */
  readonly scanned: number;
  /** Records this run deleted. */
  readonly deleted: number;
  /** Local rows (`<marker>~<name>`) deleted with those records, in the same transactions. */
  readonly deletedLocalRows: number;
  /** Scanned rows this run did not delete. */
  readonly skipped: number;
  /** Past retention but under a valid lease at the cutoff. */
  readonly skippedLeased: number;
  /** Changed since the query (a new claim; 412) and no longer expired. */
  readonly skippedChanged: number;
  /** Deleted by someone else (an overlapping sweep) since the query (404). */
  readonly alreadyDeleted: number;
  /** Storage requests sent (query pages, transactions, single deletes, checkpoint read and write). */
  readonly requests: number;
  /** Partitions finished in this run. */
  readonly partitionsCompleted: number;
  /** True when the run stopped on its time budget before visiting every partition once. */
  readonly stoppedByBudget: boolean;
  /** Where the next run starts (as written to the checkpoint, unless `checkpointSaved` is false). */
  readonly next: SweepPosition;
  /** False when an overlapping run moved the checkpoint first (its position was kept). */
  readonly checkpointSaved: boolean;
  /** Records whose retention ended at or before this time were candidates (epoch ms). */
  readonly cutoffMs: number;
  /** How long the run took, in ms (by the sweeper's clock). */
  readonly durationMs: number;
}

/**
 * Deletes expired idempotency records of a {@link TableIdempotencyStore}'s table, and nothing else,
 * partition by partition. Table Storage has no TTL: without a sweep, records pile up forever. Run
 * one {@link ExpirySweeper.sweep} per tick of a timer function.
 *
 * A record goes only when it is past retention (`retentionExpiresAtMs`) and holds no valid lease,
 * and only in the version that was checked: every delete is conditional on the row's ETag, so a
 * record re-claimed after the query survives, and an in-progress record under its lease stays.
 * A record's local-effect rows go with it, in the same transaction; other rows of the table and the
 * sweep's own checkpoint row (PartitionKey `sweep-state`) are never selected.
 *
 * Cost: one query page per up to 1,000 candidates, one transaction per up to 100 deletes of one
 * partition, plus one checkpoint read and write per run.
 *
 * Runs stop after the chunk in hand once `budgetMs` is spent (every run makes progress) and save
 * a checkpoint (partition, last RowKey done) in the table; the next run resumes there and wraps
 * around, so no partition is skipped forever. Overlapping runs are safe: a delete that finds its
 * row gone (404) or changed (412) fails its transaction, and the chunk is re-read and retried; the
 * checkpoint moves only with `If-Match`.
 *
 * @example
 * A timer function (`app` of `@azure/functions`) that sweeps the store's table every hour:
 * ```ts
 * const sweeper = new ExpirySweeper(tableClient, { partitionCount: 16, budgetMs: 240_000, log: console.log });
 * app.timer('idempotencyExpiry', { schedule: '0 0 * * * *', handler: async () => void (await sweeper.sweep()) });
 * ```
 */
export class ExpirySweeper {
  /** Partitions walked (option `partitionCount`, default 16). */
  readonly partitionCount: number;
  /** Time one run may take, in ms (option `budgetMs`). */
  readonly budgetMs: number;
  /** Rows per query page (option `pageSize`, default 1000). */
  readonly pageSize: number;
  /** Deletes per transaction (option `batchSize`, default 100). */
  readonly batchSize: number;
  /** RowKey of the checkpoint row (option `checkpointName`, default `expiry`). */
  readonly checkpointName: string;
  private readonly clock: Clock;
  private readonly log: ((message: string) => void) | undefined;
  private readonly holds: readonly HeldKeysSource[];
  private readonly holdMs: number;

  /**
   * @param client - the store's table (the client the {@link TableIdempotencyStore} was given).
   * @throws ConfigurationError when an option is out of range, or `holds` are given without `holdMs`.
   */
  constructor(
    /** The table swept. */
    readonly client: TableClient,
    options: ExpirySweeperOptions,
  ) {
    this.partitionCount = validatePartitionCount(options.partitionCount ?? DEFAULT_PARTITION_COUNT);
    this.budgetMs = bounded(options.budgetMs, 1, Number.MAX_SAFE_INTEGER, 'budgetMs');
    this.pageSize = bounded(options.pageSize ?? MAX_PAGE_SIZE, 1, MAX_PAGE_SIZE, 'pageSize');
    this.batchSize = bounded(options.batchSize ?? MAX_BATCH_SIZE, 1, MAX_BATCH_SIZE, 'batchSize');
    this.checkpointName = options.checkpointName ?? 'expiry';
    this.clock = options.clock ?? systemClock;
    this.log = options.log;
    this.holds = options.holds ?? [];
    this.holdMs = this.holds.length === 0 ? 0 : bounded(options.holdMs ?? Number.NaN, 1, Number.MAX_SAFE_INTEGER, 'holdMs');
  }

  /**
   * One run: the held keys first, then from the checkpoint, partition by partition, at most once round all
   * partitions, until `budgetMs` is spent.
   * @returns what the run did ({@link SweepReport}).
   * @throws StoreUnavailableError (retry on the next tick) / StoreRequestError, never a raw SDK error; the error of a
   *   held-keys source (nothing deleted).
   */
  async sweep(): Promise<SweepReport> {
    const startMs = this.clock.nowMs();
    const cutoffMs = startMs;
    const deadlineMs = startMs + this.budgetMs;
    const counts: SweepCounts = { scanned: 0, deleted: 0, deletedLocalRows: 0, skippedLeased: 0, skippedChanged: 0, alreadyDeleted: 0, requests: 0 };
    // Held records first: a source that fails stops the run before it deletes anything.
    const hold =
      this.holds.length === 0
        ? { addresses: new Set<HeldAddress>(), counts: { held: 0, heldWithRecord: 0, extended: 0, requests: 0 } }
        : await holdRecords(this.client, this.holds, { partitionCount: this.partitionCount, holdMs: this.holdMs, clock: this.clock });
    counts.requests += hold.counts.requests;
    let skippedHeld = 0;
    const isHeld = (row: SweepRow): boolean => {
      const held = hold.addresses.has(`${row.partitionKey}\n${row.rowKey}`);
      if (held) skippedHeld++;
      return held;
    };
    counts.requests++;
    const stored = await readSweepPosition(this.client, this.checkpointName);
    let position: SweepPosition = { partitionIndex: stored.partitionIndex % this.partitionCount, afterRowKey: stored.afterRowKey };
    let progressed = false;
    const outOfTime = (): boolean => progressed && this.clock.nowMs() >= deadlineMs;
    let partitionsCompleted = 0;
    let stoppedByBudget = false;
    for (let visited = 0; visited < this.partitionCount; visited++) {
      const partitionKey = partitionName(position.partitionIndex);
      const finished = await this.sweepPartition(partitionKey, position.afterRowKey, cutoffMs, counts, outOfTime, isHeld, (rowKey) => {
        position = { partitionIndex: position.partitionIndex, afterRowKey: rowKey };
        progressed = true;
      });
      if (!finished) {
        stoppedByBudget = true;
        break;
      }
      partitionsCompleted++;
      progressed = true;
      position = { partitionIndex: (position.partitionIndex + 1) % this.partitionCount, afterRowKey: undefined };
    }
    counts.requests++;
    const checkpointSaved = await writeSweepPosition(this.client, this.checkpointName, stored.etag, position, this.clock.nowMs());
    const skipped = counts.skippedLeased + skippedHeld + counts.skippedChanged + counts.alreadyDeleted;
    const report: SweepReport = {
      ...counts,
      held: hold.counts.held,
      heldWithRecord: hold.counts.heldWithRecord,
      heldExtended: hold.counts.extended,
      skippedHeld,
      skipped,
      partitionsCompleted,
      stoppedByBudget,
      next: position,
      checkpointSaved,
      cutoffMs,
      durationMs: this.clock.nowMs() - startMs,
    };
    this.log?.(
      `expiry sweep: ${this.holds.length === 0 ? '' : `held ${report.held} (${report.heldWithRecord} with a record, ${report.heldExtended} extended), `}` +
        `scanned ${report.scanned}, deleted ${report.deleted}, skipped ${skipped} (leased ${report.skippedLeased}, held ${skippedHeld}, ` +
        `changed ${report.skippedChanged}, already deleted ${report.alreadyDeleted}), ${report.deletedLocalRows} local rows deleted with them, ${report.requests} requests, ` +
        `${partitionsCompleted}/${this.partitionCount} partitions, ${stoppedByBudget ? 'stopped on budget' : 'cycle done'}, ` +
        `next ${partitionName(position.partitionIndex)}${position.afterRowKey ? ' (mid-partition)' : ''}` +
        `${checkpointSaved ? '' : ', checkpoint kept by an overlapping run'}`,
    );
    return report;
  }

  /**
   * Sweeps one partition from after `afterRowKey`. Calls `advance(rowKey)` once every row up to
   * `rowKey` is done. @returns false when it stopped on the budget.
   */
  private async sweepPartition(
    partitionKey: string,
    afterRowKey: string | undefined,
    cutoffMs: number,
    counts: SweepCounts,
    outOfTime: () => boolean,
    isHeld: (row: SweepRow) => boolean,
    advance: (rowKey: string) => void,
  ): Promise<boolean> {
    const filter = expiredMarkersFilter(partitionKey, cutoffMs, afterRowKey);
    for await (const page of queryMarkers(this.client, filter, this.pageSize, counts)) {
      let chunk: SweepRow[] = [];
      let actions = 0;
      let leased = 0;
      let lastRowKey: string | undefined;
      const flush = async (): Promise<boolean> => {
        if (outOfTime()) return false;
        counts.scanned += chunk.length + leased;
        counts.skippedLeased += leased;
        await deleteExpired(this.client, chunk, cutoffMs, this.pageSize, counts);
        if (lastRowKey !== undefined) advance(lastRowKey);
        chunk = [];
        actions = 0;
        leased = 0;
        return true;
      };
      for (const row of page) {
        if (isHeld(row)) counts.scanned++;
        else if (isExpired(row, cutoffMs)) {
          // A record and its local rows go in one transaction; a chunk holds at most batchSize actions
          // (a record with more local rows than that goes alone: it always fits the service's 100).
          if (chunk.length > 0 && actions + actionsOf(row) > this.batchSize && !(await flush())) return false;
          chunk.push(row);
          actions += actionsOf(row);
        } else leased++;
        lastRowKey = row.rowKey;
        if (actions >= this.batchSize && !(await flush())) return false;
      }
      if ((chunk.length > 0 || leased > 0) && !(await flush())) return false;
      if (outOfTime()) return false;
    }
    return true;
  }
}

function bounded(value: number, min: number, max: number, name: string): number {
  if (!Number.isInteger(value) || value < min || value > max) throw new ConfigurationError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
  return value;
}
