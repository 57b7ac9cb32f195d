import { OperatorUsageError } from './operatorErrors';

/** One request's answer: its items (possibly none) and where the next request starts (undefined: the end). */
export interface ScanPage<T> {
  readonly items: readonly T[];
  readonly cursor: string | undefined;
}

/** How far a scan has gone, after each page. */
export interface ScanProgress {
  /** Requests made (pages read, empty ones included). */
  readonly pages: number;
  /** Items the pages held. */
  readonly scanned: number;
  /** Items kept. */
  readonly matched: number;
}

/** The result of {@link scanPages}. */
export interface ScanResult<T> extends ScanProgress {
  readonly items: readonly T[];
  /** Where to resume (`--continue`); undefined when the scan reached the end. */
  readonly cursor: string | undefined;
  /** Why it stopped before the end: `limit` items kept, or `maxPages` requests made. */
  readonly stoppedBy: 'limit' | 'maxPages' | undefined;
}

/**
 * Reads pages one request at a time, keeping the items `keep` accepts, until the source ends, `limit` items are
 * kept, or `maxPages` requests were made: a bounded scan, whatever the store holds.
 *
 * **An empty page is not the end.** Azure answers a filtered query with a page of no rows and a continuation when
 * the scan behind it hit its time or size limit (Table: "Query timeout and pagination"; Cosmos while it fans out
 * over partitions); only the absence of a continuation ends a scan. (Azurite never answers so: the tests inject such
 * pages.) Every request counts against `maxPages`, an empty one too.
 *
 * The cursor it returns resumes exactly where it stopped, even inside a page (the source's cursor of the page and
 * how many of its items were consumed), as long as the source keeps its order (Table: PartitionKey, RowKey).
 * @throws OperatorUsageError for a cursor that is not one of its own; the source's errors.
 */
export async function scanPages<T>(
  readPage: (cursor: string | undefined) => Promise<ScanPage<T>>,
  keep: (item: T) => boolean,
  options: { readonly limit: number; readonly maxPages: number; readonly cursor?: string; readonly onProgress?: (progress: ScanProgress) => void },
): Promise<ScanResult<T>> {
  const items: T[] = [];
  let { source, skip } = decodeScanCursor(options.cursor);
  let pages = 0;
  let scanned = 0;
  for (;;) {
    if (pages >= options.maxPages) return { items, pages, scanned, matched: items.length, cursor: encodeScanCursor(source, skip), stoppedBy: 'maxPages' };
    const page = await readPage(source);
    pages++;
    for (let i = skip; i < page.items.length; i++) {
      scanned++;
      if (!keep(page.items[i])) continue;
      items.push(page.items[i]);
      if (items.length >= options.limit) {
        const rest = i + 1 < page.items.length ? encodeScanCursor(source, i + 1) : page.cursor && encodeScanCursor(page.cursor, 0);
        options.onProgress?.({ pages, scanned, matched: items.length });
        return { items, pages, scanned, matched: items.length, cursor: rest, stoppedBy: rest ? 'limit' : undefined };
      }
    }
    options.onProgress?.({ pages, scanned, matched: items.length });
    if (page.cursor === undefined) return { items, pages, scanned, matched: items.length, cursor: undefined, stoppedBy: undefined };
    source = page.cursor;
    skip = 0;
  }
}

function encodeScanCursor(source: string | undefined, skip: number): string {
  return Buffer.from(JSON.stringify({ c: source ?? null, s: skip }), 'utf8').toString('base64url');
}

function decodeScanCursor(cursor: string | undefined): { source: string | undefined; skip: number } {
  if (cursor === undefined) return { source: undefined, skip: 0 };
  let parsed: { c?: unknown; s?: unknown } | undefined;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { c?: unknown; s?: unknown };
  } catch {
    parsed = undefined;
  }
  const source = parsed?.c;
  const skip = parsed?.s;
  if (!parsed || (source !== null && typeof source !== 'string') || typeof skip !== 'number' || !Number.isInteger(skip) || skip < 0) {
    throw new OperatorUsageError(`--continue: not a cursor this command printed: ${JSON.stringify(cursor.slice(0, 60))}`);
  }
  return { source: source ?? undefined, skip };
}
