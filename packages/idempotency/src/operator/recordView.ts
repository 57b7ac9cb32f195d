import type { IdempotencyRecord, RecordStatus } from '../protocol/record';
import type { RecordState } from './recordState';

/**
 * A record as the protocol sees it, for an operator: times as ISO text and epoch ms, the stored result by its size
 * only. Never a payload: the key and the payload's digest identify the message; the result and the local rows'
 * contents are not in it (the rows by name only).
 */
export interface RecordView {
  readonly consumer: string;
  readonly key: string;
  /** The store's record id (the Table RowKey, the Cosmos document id). */
  readonly recordId: string;
  readonly status: RecordStatus;
  readonly state: RecordState;
  readonly attempt: number;
  /** SHA-256 (hex) of the payload that claimed the key. */
  readonly digest: string;
  /** The lease's end (0: none: completed or released), and whether it is live at the time of the view. */
  readonly leaseExpiresAtMs: number;
  readonly leaseLive: boolean;
  readonly retentionExpiresAtMs: number;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** UTF-8 bytes of the stored result's JSON; undefined when there is none. */
  readonly resultBytes: number | undefined;
  /** Why the key was last released (never a payload). */
  readonly lastError: string | undefined;
  /** Names of the record's local rows. */
  readonly localRows: readonly string[];
  /** Held for an operator (the consumer's reading, e.g. payments held after a takeover past the provider's key memory). */
  readonly held: boolean;
  /** The version a release or an eviction is conditional on (`--etag`). */
  readonly etag: string;
  /** What the consumer's extension shows beside it (label -> text). */
  readonly extra: Readonly<Record<string, string>>;
}

/** The view of `record` in `state` at `nowMs`. */
export function viewOf(record: IdempotencyRecord, state: RecordState, nowMs: number, extra: Readonly<Record<string, string>> = {}): RecordView {
  return {
    consumer: record.consumer,
    key: record.key,
    recordId: record.recordId,
    status: record.status,
    state,
    attempt: record.attempt,
    digest: record.digest,
    leaseExpiresAtMs: record.leaseExpiresAtMs,
    leaseLive: record.leaseExpiresAtMs > nowMs && state === 'in-progress',
    retentionExpiresAtMs: record.retentionExpiresAtMs,
    createdAtMs: record.createdAtMs,
    updatedAtMs: record.updatedAtMs,
    resultBytes: record.result === undefined ? undefined : Buffer.byteLength(JSON.stringify(record.result), 'utf8'),
    lastError: record.lastError,
    localRows: [...record.localRows],
    held: state === 'held',
    etag: record.etag,
    extra,
  };
}

/** `ms` as a short duration: `2h 5m`, `45s`, `3d 4h`, `250ms`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(Math.trunc(ms));
  if (abs < 1000) return `${abs}ms`;
  const units: Array<[string, number]> = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ];
  const parts: string[] = [];
  let rest = abs;
  for (const [unit, size] of units) {
    if (rest >= size && parts.length < 2) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    } else if (parts.length > 0) break;
  }
  return parts.join(' ');
}

/** An epoch-ms time as ISO text with how far it is from `nowMs` (`... (in 45s)`, `... (2h 5m ago)`); 0 is `none`. */
export function formatTime(ms: number, nowMs: number): string {
  if (ms === 0) return 'none';
  if (!Number.isFinite(ms)) return String(ms);
  const iso = new Date(ms).toISOString();
  return ms >= nowMs ? `${iso} (in ${formatDuration(ms - nowMs)})` : `${iso} (${formatDuration(nowMs - ms)} ago)`;
}
