import type { IdempotencyKey } from '../protocol/keys';
import type { IdempotencyRecord } from '../protocol/record';
import { requireRecord } from './findRecord';
import { clockOf, type OperatorOptions } from './operatorOptions';
import type { RecordsBackend } from './RecordsBackend';
import { extensionFor, recordState, type ConsumerExtension, type ExtensionContext } from './recordState';
import { viewOf, type RecordView } from './recordView';

/** What {@link inspectRecord} found. */
export interface RecordInspection {
  /** The record as stored (its result included: print {@link view}, not this). */
  readonly record: IdempotencyRecord;
  /** The record as an operator sees it, the consumer extension's facts in `extra`; no payload. */
  readonly view: RecordView;
  /** Work on it still going outside the store, as the consumer's extension reports it (or that it could not tell). */
  readonly activeWork: string | undefined;
}

/**
 * Reads the record of `key` and how the protocol sees it at this time: status and state, attempt, lease and when it
 * lapses, digest, result size, retention, held or not; the consumer's extension adds its facts (payments: the run's
 * status and the Payment row's) and says whether work on it still goes on. One point read, plus what the extension reads.
 *
 * @example
 * ```ts
 * const { view } = await inspectRecord(tableRecords(client), { consumer: 'payments', key: 'pay-42' });
 * console.log(view.state, view.attempt, view.leaseExpiresAtMs);
 * ```
 * @throws InvalidKeyError for a malformed key; OperatorRefusedError (`notFound`, `unknownConsumer`); OperatorPermissionError; store errors
 */
export async function inspectRecord(backend: RecordsBackend, key: IdempotencyKey, options: OperatorOptions = {}): Promise<RecordInspection> {
  const record = await requireRecord(backend, key);
  return inspectionOf(backend, key, record, options);
}

/** The inspection of `record` (already read) at this time. */
export async function inspectionOf(
  backend: RecordsBackend,
  key: IdempotencyKey,
  record: IdempotencyRecord,
  options: OperatorOptions = {},
): Promise<RecordInspection> {
  const nowMs = clockOf(options).nowMs();
  const extension = extensionFor(options.extensions, key.consumer);
  const context: ExtensionContext = { key, readLocalRow: (name) => backend.readLocalRow(key, name) };
  const extra = await describeSafely(extension, record, context);
  const activeWork = await activeWorkSafely(extension, record, context);
  return { record, view: viewOf(record, recordState(record, nowMs, extension), nowMs, extra), activeWork };
}

/**
 * The extension's answer about work going on; one that fails answers that it cannot tell, which counts as work going:
 * a release is refused, an eviction needs `--force` (fail closed), and `show` still shows the record.
 */
async function activeWorkSafely(extension: ConsumerExtension | undefined, record: IdempotencyRecord, context: ExtensionContext): Promise<string | undefined> {
  if (!extension?.activeWork) return undefined;
  try {
    return await extension.activeWork(record, context);
  } catch (error) {
    return `could not tell whether work on it goes on: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** The extension's facts; a failing extension shows its failure instead (the record itself is still shown). */
async function describeSafely(
  extension: ConsumerExtension | undefined,
  record: IdempotencyRecord,
  context: ExtensionContext,
): Promise<Readonly<Record<string, string>>> {
  if (!extension?.describe) return {};
  try {
    return await extension.describe(record, context);
  } catch (error) {
    return { [`${extension.consumer} extension`]: `failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
