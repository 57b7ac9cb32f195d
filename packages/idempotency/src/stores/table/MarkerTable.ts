import type { TableClient, TableEntity, TransactionAction } from '@azure/data-tables';
import { requireConditionEtag } from '../../protocol/conditionEtag';
import { CallDeadlines } from '../../protocol/CallDeadlines';
import type { StoreCallKind } from '../../protocol/deadline';
import { IdempotencyError, StoreRequestError } from '../../protocol/errors';
import type { LocalEffect } from '../../protocol/IdempotencyStore';
import type { IdempotencyRecord } from '../../protocol/record';
import { classifyStoreError, toDomainError } from './storeErrors';
import type { StoreConflict } from '../../protocol/storeConflict';
import type { TableAddress } from './partitions';
import { effectEntity, localRowKey, toRecord } from './tableRows';
import { insertDirect, mergeDirect } from './directWrites';

/** How a marker is written: insert-if-absent, or replace / merge only if its ETag matches. */
export type WriteMode = 'create' | 'replace' | 'merge';

/** A write's answer: the marker's new ETag, or one of the three answers the store decides on. */
export type WriteResult = { readonly etag: string } | { readonly conflict: StoreConflict };

/**
 * The Table I/O of the idempotency store: every SDK call under one deadline (`CallDeadlines`: one timer for all),
 * every SDK failure classified (`classifyStoreError`): 409/412/404 come back as a conflict, all
 * else as a domain error. Knows nothing of the decision rules.
 */
export class MarkerTable {
  private readonly deadlines: CallDeadlines;

  constructor(
    readonly client: TableClient,
    readonly callTimeoutMs: number,
  ) {
    this.deadlines = new CallDeadlines(callTimeoutMs, 'table store', true);
  }

  /** Creates the table when it does not exist. @throws StoreUnavailableError, StoreRequestError */
  async ensureTable(): Promise<void> {
    try {
      await this.call('createTable', 'write', (abortSignal) => this.client.createTable({ abortSignal }));
    } catch (error) {
      throw toDomainError(error, 'createTable', 'write');
    }
  }

  /**
   * One write: the marker alone, or the marker, its effects (upserted) and the deletes of
   * `staleRows` (local rows no longer on record) in one transaction. A replace or merge needs the marker's `etag`
   * (If-Match): an undefined or empty one is refused before anything is sent (see `requireConditionEtag`).
   * @throws StoreUnavailableError, StoreRequestError (never a raw SDK error)
   */
  write(
    marker: TableEntity,
    effects: readonly LocalEffect[],
    staleRows: readonly string[],
    mode: WriteMode,
    etag: string | undefined,
    operation: string,
  ): Promise<WriteResult> {
    const updateMode = mode === 'merge' ? 'Merge' : 'Replace';
    let condition: string;
    try {
      condition = mode === 'create' ? '' : requireConditionEtag(etag, operation, 'table store');
    } catch (error) {
      // Refused before anything is sent, as the async function this was failed (a rejection, not a throw).
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      return Promise.reject(error);
    }
    if (effects.length === 0 && staleRows.length === 0) {
      // The marker alone: straight through the client's pipeline while no tracer is registered (directWrites.ts).
      // A promise chain, not an async function: one promise layer less on every claim and completion.
      return this.call(operation, 'write', (abortSignal) =>
        mode === 'create'
          ? (insertDirect(this.client, marker, abortSignal, true) ?? this.client.createEntity(marker, { abortSignal }))
          : ((mode === 'merge' ? mergeDirect(this.client, marker, condition, abortSignal, true) : undefined) ??
            this.client.updateEntity(marker, updateMode, { etag, abortSignal })),
      ).then(
        (response) => ({ etag: requireEtag(response.etag, operation) }),
        (error: unknown) => writeFailure(error, operation),
      );
    }
    return this.writeTransaction(marker, effects, staleRows, mode, etag, operation);
  }

  /** The marker, its effects and the deletes of `staleRows` in one transaction (see {@link write}). */
  private async writeTransaction(
    marker: TableEntity,
    effects: readonly LocalEffect[],
    staleRows: readonly string[],
    mode: WriteMode,
    etag: string | undefined,
    operation: string,
  ): Promise<WriteResult> {
    const updateMode = mode === 'merge' ? 'Merge' : 'Replace';
    try {
      const markerAction: TransactionAction = mode === 'create' ? ['create', marker] : ['update', marker, updateMode, { etag }];
      // Upsert even on create: the marker's insert-if-absent guards the transaction, and a row of
      // the same name left by an earlier lifetime of the key is taken over, not a 409 forever.
      const effectActions = effects.map((effect): TransactionAction => ['upsert', effectEntity(marker, effect), 'Replace']);
      const deleteActions = staleRows.map((name): TransactionAction => [
        'delete',
        { partitionKey: marker.partitionKey, rowKey: localRowKey(marker.rowKey, name) },
      ]);
      const response = await this.call(operation, 'write', (abortSignal) =>
        this.client.submitTransaction([markerAction, ...effectActions, ...deleteActions], { abortSignal }),
      );
      // Sub-responses come in the order of the actions: the marker's is first.
      return { etag: requireEtag(response.subResponses[0]?.etag, operation) };
    } catch (error) {
      return writeFailure(error, operation);
    }
  }

  /**
   * Inserts several markers of one partition in one entity-group transaction (all or nothing: one
   * existing marker fails it with `exists`). @throws StoreUnavailableError, StoreRequestError
   */
  async createMany(markers: readonly TableEntity[], operation: string): Promise<{ readonly etags: string[] } | { readonly conflict: StoreConflict }> {
    try {
      const response = await this.call(operation, 'write', (abortSignal) =>
        this.client.submitTransaction(
          markers.map((marker): TransactionAction => ['create', marker]),
          { abortSignal },
        ),
      );
      return { etags: markers.map((_, i) => requireEtag(response.subResponses[i]?.etag, operation)) };
    } catch (error) {
      if (error instanceof IdempotencyError) throw error;
      return { conflict: classifyStoreError(error, operation, 'write') };
    }
  }

  /**
   * The markers among `rowKeys` of one partition, in one query per 15 keys (the service's limit of
   * comparisons in a filter). @throws StoreUnavailableError, StoreRequestError
   */
  async readMany(partitionKey: string, rowKeys: readonly string[]): Promise<Map<string, IdempotencyRecord>> {
    const found = new Map<string, IdempotencyRecord>();
    for (let i = 0; i < rowKeys.length; i += MAX_FILTER_COMPARISONS - 1) {
      const chunk = rowKeys.slice(i, i + MAX_FILTER_COMPARISONS - 1);
      const filter = `PartitionKey eq ${odataString(partitionKey)} and (${chunk.map((rowKey) => `RowKey eq ${odataString(rowKey)}`).join(' or ')})`;
      try {
        await this.call('readMany', 'read', async (abortSignal) => {
          for await (const entity of this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter }, abortSignal })) {
            found.set(String(entity.rowKey), toRecord(entity));
          }
        });
      } catch (error) {
        throw toDomainError(error, 'readMany', 'read');
      }
    }
    return found;
  }

  /** The record at `address`, or undefined. @throws StoreUnavailableError, StoreRequestError */
  read(address: TableAddress): Promise<IdempotencyRecord | undefined>;
  read<T>(address: TableAddress, as: (entity: Record<string, unknown>) => T): Promise<T | undefined>;
  async read(address: TableAddress, as: (entity: Record<string, unknown>) => unknown = (entity) => toRecord(entity as TableEntity)): Promise<unknown> {
    try {
      const entity = await this.call('read', 'read', (abortSignal) =>
        this.client.getEntity<Record<string, unknown>>(address.partitionKey, address.rowKey, { abortSignal }),
      );
      return as(entity);
    } catch (error) {
      if (error instanceof IdempotencyError) throw error;
      if (classifyStoreError(error, 'read', 'read') === 'notFound') return undefined;
      throw new StoreRequestError('unexpected conflict answer to a read', 'read', undefined, error);
    }
  }

  /**
   * The local rows `names` of the marker at `address`: name -> the row's own properties (system
   * properties and `kind` left out), absent rows missing. One read per row (only on the rare path
   * that checks whether a write was already ours). @throws StoreUnavailableError, StoreRequestError
   */
  async readRows(address: TableAddress, names: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const rows = new Map<string, Record<string, unknown>>();
    for (const name of names) {
      const row = await this.read({ partitionKey: address.partitionKey, rowKey: localRowKey(address.rowKey, name) }, (entity) => entity);
      if (row !== undefined) rows.set(name, ownProperties(row));
    }
    return rows;
  }

  /** Every SDK call goes through here: one deadline for all (see CallDeadlines.ts). */
  private call<T>(operation: string, kind: StoreCallKind, sdkCall: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    return this.deadlines.run(operation, kind, sdkCall);
  }
}

/** A row's own properties: without the system properties, the ETag, OData annotations and the store's `kind`. */
function ownProperties(entity: Record<string, unknown>): Record<string, unknown> {
  const own: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(entity)) {
    if (['partitionKey', 'rowKey', 'timestamp', 'etag', 'kind'].includes(name) || name.includes('@odata') || name.startsWith('odata.')) continue;
    own[name] = value;
  }
  return own;
}

/** Most comparisons the Table service allows in one filter. */
const MAX_FILTER_COMPARISONS = 15;

/** An OData string literal. */
function odataString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** A write's failure: a conflict the store decides on, or thrown as a domain error (an `IdempotencyError` as it is). */
function writeFailure(error: unknown, operation: string): WriteResult {
  if (error instanceof IdempotencyError) throw error;
  return { conflict: classifyStoreError(error, operation, 'write') };
}

function requireEtag(etag: string | undefined, operation: string): string {
  if (!etag) throw new StoreRequestError(`store returned no etag for ${operation}`, operation, undefined);
  return etag;
}
