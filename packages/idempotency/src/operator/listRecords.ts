import { assertValidKey } from '../protocol/keys';
import type { IdempotencyRecord } from '../protocol/record';
import { CONSUMER_PROBE_PAGES, probeConsumer, unknownConsumerMessage } from './findRecord';
import { OperatorRefusal, OperatorRefusedError, OperatorUsageError } from './operatorErrors';
import { clockOf, type OperatorOptions } from './operatorOptions';
import { scanPages, type ScanProgress } from './pagedScan';
import type { RecordsBackend } from './RecordsBackend';
import { extensionFor, RECORD_STATES, RecordState, recordState, statusesOf } from './recordState';
import { viewOf, type RecordView } from './recordView';

/** Bounds of a listing: defaults and ceilings. */
export const LIST_BOUNDS = {
  limit: { default: 100, max: 100_000 },
  maxPages: { default: 50, max: 100_000 },
  pageSize: { default: 100, max: 1000 },
} as const;

/** Options of {@link listRecords}. */
export interface ListRecordsOptions extends OperatorOptions {
  readonly consumer: string;
  /** Only records in these states (`in-progress` includes `lapsed`). Default: all. */
  readonly states?: readonly RecordState[];
  /** Only records last written more than this long ago (ms). */
  readonly olderThanMs?: number;
  /** Most records to return (default 100). */
  readonly limit?: number;
  /**
   * Most requests to make (default 50), every one the listing makes: an empty page counts, and so does the look-up
   * for any record under the consumer after a listing that found nothing (it gets what the scan left of the bound).
   */
  readonly maxPages?: number;
  /** Records asked for per request (default 100, at most 1,000). */
  readonly pageSize?: number;
  /** Resume a listing where an earlier one stopped (its `cursor`). */
  readonly cursor?: string;
  /** Told after each request how far the listing has gone (the CLI prints a progress line on stderr). */
  readonly onProgress?: (progress: ScanProgress) => void;
}

/** What {@link listRecords} found. */
export interface RecordListing extends ScanProgress {
  readonly views: readonly RecordView[];
  /** Where to resume (`cursor` / `--continue`); undefined when the listing reached the end. */
  readonly cursor: string | undefined;
  /** Why it stopped before the end: the `limit`, or `maxPages` requests. */
  readonly stoppedBy: 'limit' | 'maxPages' | undefined;
}

/**
 * Lists one consumer's records, filtered by state and age, in bounded, paged queries: at most `maxPages` requests in
 * all (the unknown-consumer look-up included) and `limit` records, whatever the store holds (Table: one query per partition with the filter, partition after
 * partition; Cosmos: one cross-partition query), following continuations across empty pages; `cursor` resumes.
 * The status and age are filtered by the store, the exact state (lapsed, failed, held) on each record read.
 *
 * @example
 * ```ts
 * const stuck = await listRecords(backend, { consumer: 'payments', states: ['in-progress'], olderThanMs: 2 * 3_600_000 });
 * ```
 * @throws OperatorUsageError for bounds out of range; InvalidKeyError for a malformed consumer name;
 *   OperatorRefusedError (`unknownConsumer`) when no record at all is under the consumer; store errors
 */
export async function listRecords(backend: RecordsBackend, options: ListRecordsOptions): Promise<RecordListing> {
  assertValidKey({ consumer: options.consumer, key: '-' });
  const limit = bounded('limit', options.limit, LIST_BOUNDS.limit);
  const maxPages = bounded('maxPages', options.maxPages, LIST_BOUNDS.maxPages);
  const pageSize = bounded('pageSize', options.pageSize, LIST_BOUNDS.pageSize);
  const states = options.states ?? [];
  for (const state of states)
    if (!RECORD_STATES.includes(state)) throw new OperatorUsageError(`unknown state ${JSON.stringify(state)}: one of ${RECORD_STATES.join(', ')}`);
  if (options.olderThanMs !== undefined && !(Number.isFinite(options.olderThanMs) && options.olderThanMs >= 0))
    throw new OperatorUsageError(`olderThanMs must be a duration of 0 or more, got ${options.olderThanMs}`);
  const nowMs = clockOf(options).nowMs();
  const wanted = new Set<RecordState>(states.flatMap((state) => (state === RecordState.InProgress ? [state, RecordState.Lapsed] : [state])));
  const extension = extensionFor(options.extensions, options.consumer);
  const query = {
    consumer: options.consumer,
    statuses: wanted.size > 0 ? statusesOf([...wanted]) : undefined,
    updatedAtOrBeforeMs: options.olderThanMs === undefined ? undefined : nowMs - options.olderThanMs,
  };
  const scan = await scanPages<IdempotencyRecord>(
    async (cursor) => {
      const page = await backend.queryPage(query, cursor, pageSize);
      return { items: page.records, cursor: page.cursor };
    },
    (record) => wanted.size === 0 || wanted.has(recordState(record, nowMs, extension)),
    { limit, maxPages, cursor: options.cursor, onProgress: options.onProgress },
  );
  // Found nothing: is the consumer name wrong? The look-up's requests count against the same `maxPages` (Azure may
  // answer it, too, with empty pages); when the bound leaves it none, or it cannot tell within what is left, the
  // listing ends as it is (empty, with its cursor) and no consumer is called unknown.
  let probePages = 0;
  if (scan.items.length === 0 && options.cursor === undefined) {
    const filtered = wanted.size > 0 || options.olderThanMs !== undefined;
    if (!filtered && scan.stoppedBy === undefined)
      throw new OperatorRefusedError(OperatorRefusal.UnknownConsumer, unknownConsumerMessage(backend, options.consumer));
    const probe = await probeConsumer(backend, options.consumer, Math.min(CONSUMER_PROBE_PAGES, maxPages - scan.pages));
    probePages = probe.pages;
    if (probe.found === false) throw new OperatorRefusedError(OperatorRefusal.UnknownConsumer, unknownConsumerMessage(backend, options.consumer));
  }
  return {
    views: scan.items.map((record) => viewOf(record, recordState(record, nowMs, extension), nowMs)),
    pages: scan.pages + probePages,
    scanned: scan.scanned,
    matched: scan.matched,
    cursor: scan.cursor,
    stoppedBy: scan.stoppedBy,
  };
}

function bounded(name: string, value: number | undefined, rule: { readonly default: number; readonly max: number }): number {
  if (value === undefined) return rule.default;
  if (!Number.isInteger(value) || value < 1 || value > rule.max) throw new OperatorUsageError(`${name} must be an integer from 1 to ${rule.max}, got ${value}`);
  return value;
}
