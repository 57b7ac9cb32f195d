import { assertValidKey, type IdempotencyKey } from '../protocol/keys';
import type { IdempotencyRecord } from '../protocol/record';
import { OperatorRefusal, OperatorRefusedError } from './operatorErrors';
import { scanPages } from './pagedScan';
import type { RecordsBackend } from './RecordsBackend';

/** Requests the "is there any record under this consumer" look-up may make before it gives up. */
export const CONSUMER_PROBE_PAGES = 64;

/**
 * The record of `key`, or the refusal that says why there is none: {@link OperatorRefusal.UnknownConsumer} when no
 * record at all is under `key.consumer` (a mistyped consumer name), else {@link OperatorRefusal.NotFound}.
 * @throws InvalidKeyError for a malformed key (the rules of `keyFromMessageId`: before any request); OperatorRefusedError; store errors
 */
export async function requireRecord(backend: RecordsBackend, key: IdempotencyKey): Promise<IdempotencyRecord> {
  assertValidKey(key);
  const record = await backend.read(key);
  if (record) return record;
  if (!(await hasAnyRecord(backend, key.consumer)))
    throw new OperatorRefusedError(OperatorRefusal.UnknownConsumer, unknownConsumerMessage(backend, key.consumer));
  throw new OperatorRefusedError(
    OperatorRefusal.NotFound,
    `no record of key ${JSON.stringify(key.key)} under consumer ${JSON.stringify(key.consumer)}: never claimed, or deleted (retention, eviction)`,
  );
}

/**
 * True when the store holds at least one record of `consumer`: a bounded look-up ({@link CONSUMER_PROBE_PAGES}
 * requests at most); false also when none was found within them.
 */
export async function hasAnyRecord(backend: RecordsBackend, consumer: string): Promise<boolean> {
  return (await probeConsumer(backend, consumer, CONSUMER_PROBE_PAGES)).found === true;
}

/** What {@link probeConsumer} learned, and the requests it made. */
export interface ConsumerProbe {
  /** true: a record is under the consumer; false: the store says none is; undefined: `maxPages` requests did not tell. */
  readonly found: boolean | undefined;
  readonly pages: number;
}

/**
 * Is there any record under `consumer`? At most `maxPages` requests (a caller's own bound, e.g. what is left of
 * `--max-pages`): Azure may answer empty pages with a continuation, so the answer can stay undecided.
 * @throws store errors
 */
export async function probeConsumer(backend: RecordsBackend, consumer: string, maxPages: number): Promise<ConsumerProbe> {
  if (maxPages < 1) return { found: undefined, pages: 0 };
  const scan = await scanPages(
    async (cursor) => {
      const page = await backend.queryPage({ consumer }, cursor, 1);
      return { items: page.records, cursor: page.cursor };
    },
    () => true,
    { limit: 1, maxPages },
  );
  return { found: scan.items.length > 0 ? true : scan.stoppedBy === 'maxPages' ? undefined : false, pages: scan.pages };
}

/** The message of an unknown consumer: the name as given, and what to check. */
export function unknownConsumerMessage(backend: RecordsBackend, consumer: string): string {
  return (
    `unknown consumer ${JSON.stringify(consumer)}: no record found under it in this ${backend.kind} store ` +
    '(check the name, it is case-sensitive, and the table or container the command reads)'
  );
}
