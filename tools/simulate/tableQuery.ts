import type { TableClient, TableEntity } from '@azure/data-tables';
import { keyFromMessageId, type IdempotencyRecord } from 'azure-functions-idempotency';
import { markerEntity, tableAddress } from 'azure-functions-idempotency/internal';
import type { Random } from './random';
import type { SimStore } from './store';

/**
 * The reconciler's Table query run as the app writes it: `lapsedInProgressRecords` (src/lifecycle/lapsedRecords.ts)
 * asks this client for `listEntities({ queryOptions: { filter } }).byPage(...)`, and the app's own OData filter is
 * evaluated here against the simulated store's records encoded as the Table store's marker rows (`markerEntity`,
 * `tableAddress`: partition, row key, `Int64` times). A page holds the rows of one partition scanned in row key order
 * and, when empty pages are on (Azure at scale), stops after 1-3 rows scanned with a continuation token, possibly
 * with no row. Latency and faults are the store's (each page is one store call).
 */
export function simTableClient(
  store: SimStore,
  random: Random,
  options: { partitionCount: number; retentionMs: number; emptyPages: () => boolean },
): TableClient {
  const rowsOf = (partitionKey: string): TableEntity[] =>
    store.inner
      .records()
      .map((record) => ({ record, entity: markerOf(record, options) }))
      .filter(({ entity }) => entity.partitionKey === partitionKey)
      .sort((a, b) => (String(a.entity.rowKey) < String(b.entity.rowKey) ? -1 : 1))
      .map(({ entity }) => entity);
  const listEntities = ({ queryOptions }: { queryOptions?: { filter?: string } } = {}) => ({
    byPage: ({ maxPageSize = 1000 }: { maxPageSize?: number } = {}) => {
      const matches = compileFilter(queryOptions?.filter ?? '');
      const partitionKey = partitionOf(queryOptions?.filter ?? '');
      let after: string | undefined = '';
      return {
        async next(): Promise<IteratorResult<TableEntity[]>> {
          if (after === undefined) return { done: true, value: undefined };
          const from = after;
          const page = await store.query('reconcile.query', async () => {
            const rest = rowsOf(partitionKey).filter((row) => String(row.rowKey) > from);
            const scanLimit = options.emptyPages() ? random.int(1, 3) : maxPageSize;
            const scanned = rest.slice(0, scanLimit);
            const last = scanned.at(-1);
            return { rows: scanned.filter(matches), next: rest.length > scanned.length && last ? String(last.rowKey) : undefined };
          });
          after = page.next;
          return { done: false, value: page.rows };
        },
      };
    },
  });
  return { listEntities } as unknown as TableClient;
}

/** A record as the Table store writes its marker row. */
function markerOf(record: IdempotencyRecord, options: { partitionCount: number; retentionMs: number }): TableEntity {
  const key = keyFromMessageId(record.consumer, record.key);
  const entity = markerEntity(
    {
      key,
      address: tableAddress(key, options.partitionCount),
      digest: record.digest,
      createdAtMs: record.createdAtMs,
      nowMs: record.updatedAtMs,
      retentionMs: 0,
    },
    { ...record, resultJson: record.result === undefined ? undefined : JSON.stringify(record.result), localRows: record.localRows ?? [] },
  );
  return { ...entity, retentionExpiresAtMs: { value: String(record.retentionExpiresAtMs), type: 'Int64' }, etag: record.etag };
}

/** The `PartitionKey eq '...'` the query is scoped to (the app's queries name one partition each). */
function partitionOf(filter: string): string {
  const match = /PartitionKey eq '((?:[^']|'')*)'/.exec(filter);
  if (!match) throw new Error(`simulated table: a query without a PartitionKey is a table scan (${filter})`);
  return match[1].replace(/''/g, "'");
}

type Value = string | number | boolean;

const SYSTEM_PROPERTIES: Readonly<Record<string, string>> = { PartitionKey: 'partitionKey', RowKey: 'rowKey' };
type Predicate = (row: TableEntity) => boolean;

/**
 * Compiles the subset of OData `$filter` the Table service takes: comparisons (`eq ne lt le gt ge`) of a property with
 * a string (`'...'`, `''` for a quote), an `Int64` (`123L`), a number or a boolean, joined by `and`/`or`, `not`,
 * parentheses. A property the row does not have makes its comparison false (as the service does). Throws on anything else.
 */
export function compileFilter(filter: string): Predicate {
  const tokens = filter.match(/'(?:[^']|'')*'|\(|\)|[^\s()]+/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const take = () => tokens[at++];
  const literal = (token: string): Value => {
    if (token.startsWith("'")) return token.slice(1, -1).replace(/''/g, "'");
    if (token === 'true' || token === 'false') return token === 'true';
    const number = /^-?\d+(\.\d+)?L?$/.test(token) ? Number(token.replace(/L$/, '')) : Number.NaN;
    if (Number.isNaN(number)) throw new Error(`simulated table: unsupported literal ${token} in ${filter}`);
    return number;
  };
  const comparison = (): Predicate => {
    if (peek() === '(') {
      take();
      const inner = or();
      if (take() !== ')') throw new Error(`simulated table: unbalanced parentheses in ${filter}`);
      return inner;
    }
    if (peek() === 'not') {
      take();
      const inner = comparison();
      return (row) => !inner(row);
    }
    const property = take();
    const operator = take();
    const value = literal(take());
    const compare = {
      eq: (c: number) => c === 0,
      ne: (c: number) => c !== 0,
      lt: (c: number) => c < 0,
      le: (c: number) => c <= 0,
      gt: (c: number) => c > 0,
      ge: (c: number) => c >= 0,
    }[operator];
    if (!compare) throw new Error(`simulated table: unsupported operator ${operator} in ${filter}`);
    return (row) => {
      // The service's system properties are the SDK entity's `partitionKey` / `rowKey`.
      const raw = row[SYSTEM_PROPERTIES[property] ?? property];
      if (raw === undefined || raw === null) return false;
      const actual: Value = typeof raw === 'object' && 'value' in raw ? Number((raw as { value: string }).value) : (raw as Value);
      if (typeof actual !== typeof value) return false;
      return compare(actual < value ? -1 : actual > value ? 1 : 0);
    };
  };
  const and = (): Predicate => {
    let left = comparison();
    while (peek() === 'and') {
      take();
      const a = left;
      const b = comparison();
      left = (row) => a(row) && b(row);
    }
    return left;
  };
  const or = (): Predicate => {
    let left = and();
    while (peek() === 'or') {
      take();
      const a = left;
      const b = and();
      left = (row) => a(row) || b(row);
    }
    return left;
  };
  const predicate = tokens.length === 0 ? () => true : or();
  if (at !== tokens.length) throw new Error(`simulated table: could not read ${filter} past ${tokens[at]}`);
  return predicate;
}
