import type { TableClient, TableEntity } from '@azure/data-tables';
import { tracerRegistered } from './idleTracing';

/** What `TableClient.createEntity` and `updateEntity` answer (the generated operation's flattened response). */
type WriteResponse = Awaited<ReturnType<TableClient['createEntity']>>;

/**
 * The generated operations behind `TableClient.createEntity` and `updateEntity(..., 'Merge')`: the client's `table`
 * member (`@azure/data-tables` 13, not in its typings). Each public method starts a tracing span (`withSpan`), then
 * serializes the entity and calls one of these; the request sent is the same.
 */
interface GeneratedTable {
  insertEntity(
    table: string,
    options: { tableEntityProperties: Record<string, unknown>; responsePreference: 'return-no-content'; abortSignal: AbortSignal },
  ): Promise<WriteResponse>;
  mergeEntity(
    table: string,
    partitionKey: string,
    rowKey: string,
    options: { tableEntityProperties: Record<string, unknown>; ifMatch: string; abortSignal: AbortSignal },
  ): Promise<WriteResponse>;
}

/**
 * A marker's insert and conditional merge without the SDK's per-operation span while no tracer provider is registered
 * (`tracerRegistered`: without one the span is a no-op, started and ended for nothing). The same request goes through
 * the same pipeline (authentication, retries, deadline signal, the caller's policies) with the same body: the entity
 * serialized as `@azure/data-tables` does (`PartitionKey`, `RowKey`; an `{ value, type }` property as its value and
 * `<name>@odata.type`). Answers `undefined`, and the caller uses the public method, when a tracer is registered, when
 * the client is not a plain `TableClient` of that shape (a method replaced on the instance, no `table` member), or
 * when the entity holds a value other than a string, a number or an `{ value: string, type }`.
 */
export function insertDirect(client: TableClient, entity: TableEntity, abortSignal: AbortSignal): Promise<WriteResponse> | undefined {
  const table = generatedTable(client, 'createEntity');
  const properties = table && serializeMarker(entity);
  return properties && table.insertEntity(client.tableName, { tableEntityProperties: properties, responsePreference: 'return-no-content', abortSignal });
}

/** A conditional merge of `entity` on `etag`, as {@link insertDirect}: `undefined` when the public method must be used. */
export function mergeDirect(client: TableClient, entity: TableEntity, etag: string, abortSignal: AbortSignal): Promise<WriteResponse> | undefined {
  const table = generatedTable(client, 'updateEntity');
  const properties = table && serializeMarker(entity);
  return (
    properties &&
    table.mergeEntity(client.tableName, escapeQuotes(entity.partitionKey), escapeQuotes(entity.rowKey), {
      tableEntityProperties: properties,
      ifMatch: etag,
      abortSignal,
    })
  );
}

function generatedTable(client: TableClient, method: 'createEntity' | 'updateEntity'): GeneratedTable | undefined {
  if (tracerRegistered() || Object.prototype.hasOwnProperty.call(client, method)) return undefined;
  const table = (client as unknown as { table?: Partial<GeneratedTable> }).table;
  return typeof table?.insertEntity === 'function' && typeof table.mergeEntity === 'function' ? (table as GeneratedTable) : undefined;
}

/** The entity as `@azure/data-tables`' `serialize` writes it, or undefined for a value it is not written for here. */
function serializeMarker(entity: TableEntity): Record<string, unknown> | undefined {
  const serialized: Record<string, unknown> = {};
  for (const name of Object.keys(entity)) {
    const value: unknown = entity[name];
    const key = name === 'partitionKey' ? 'PartitionKey' : name === 'rowKey' ? 'RowKey' : name;
    if (typeof value === 'string' || typeof value === 'number') {
      serialized[key] = value;
    } else if (isEdmString(value)) {
      serialized[key] = value.value;
      serialized[`${key}@odata.type`] = `Edm.${value.type}`;
    } else {
      return undefined;
    }
  }
  return serialized;
}

/** An `{ value, type }` property of a type whose value is written as a string. */
function isEdmString(value: unknown): value is { value: string; type: 'Int64' | 'String' | 'Guid' } {
  if (typeof value !== 'object' || value === null) return false;
  const { value: inner, type } = value as { value?: unknown; type?: unknown };
  return typeof inner === 'string' && (type === 'Int64' || type === 'String' || type === 'Guid');
}

/** A key as the SDK puts it in a request's URL (`odata.js`: quotes doubled). */
function escapeQuotes(key: string): string {
  return key.replace(/'/g, "''");
}
