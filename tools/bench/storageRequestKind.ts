/** The Azure Storage service a request went to (one endpoint each in a connection string). */
export type StorageService = 'blob' | 'queue' | 'table';

/** One storage request as seen on the wire. */
export interface StorageRequest {
  readonly service: StorageService;
  readonly method: string;
  /** Path and query, e.g. `/devstoreaccount1/hub-workitems/messages?numofmessages=32`. */
  readonly url: string;
  /** `x-ms-lease-action` for blob leases; `x-http-method` when a POST tunnels MERGE. */
  readonly headers?: Readonly<Record<string, string | undefined>>;
  /** A `$batch` request's body: the table name is inside it. */
  readonly body?: string;
}

/**
 * What a request is, for counting and billing: `service`, the resource (queue, table or blob container name, or
 * `account`), the operation, and the billing class Azure's price list uses (queues: class 1 = writes, class 2 =
 * reads; blobs: write, read, other; tables: one price per transaction, `transaction`).
 */
export interface StorageRequestKind {
  readonly service: StorageService;
  readonly resource: string;
  readonly operation: string;
  readonly billing: 'transaction' | 'class1' | 'class2' | 'write' | 'read' | 'other';
}

/**
 * Classifies a storage REST request (Queue, Blob, Table APIs of Azurite and Azure alike) by its method, path and
 * query. Queue `get` (a dequeue) is refined later by its answer: `get` with messages, `emptyGet` without.
 * @example classifyStorageRequest({ service: 'queue', method: 'DELETE', url: '/acct/q/messages/1?popreceipt=x' }) // { operation: 'delete', ... }
 */
export function classifyStorageRequest(request: StorageRequest): StorageRequestKind {
  const url = new URL(request.url, 'http://storage.local');
  const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent).slice(1); // drop the account
  const query = url.searchParams;
  const method = request.method.toUpperCase();
  if (request.service === 'queue') return queueKind(method, segments, query);
  if (request.service === 'blob') return blobKind(method, segments, query, request.headers ?? {});
  return tableKind(method, segments, request.headers ?? {}, request.body);
}

function queueKind(method: string, segments: string[], query: URLSearchParams): StorageRequestKind {
  const kind = (resource: string, operation: string, billing: 'class1' | 'class2') => ({ service: 'queue' as const, resource, operation, billing });
  const [queue, messages, messageId] = segments;
  if (!queue)
    return kind('account', query.get('comp') === 'list' ? 'listQueues' : `${method.toLowerCase()}Account`, query.get('comp') === 'list' ? 'class1' : 'class2');
  if (messages === 'messages') {
    if (messageId !== undefined) return method === 'DELETE' ? kind(queue, 'delete', 'class1') : kind(queue, 'updateVisibility', 'class1');
    if (method === 'POST') return kind(queue, 'put', 'class1');
    if (method === 'DELETE') return kind(queue, 'clear', 'class1');
    return query.get('peekonly') === 'true' ? kind(queue, 'peek', 'class2') : kind(queue, 'get', 'class2');
  }
  if (query.get('comp') === 'metadata') return method === 'PUT' ? kind(queue, 'setMetadata', 'class1') : kind(queue, 'getMetadata', 'class2');
  if (method === 'PUT') return kind(queue, 'create', 'class1');
  if (method === 'DELETE') return kind(queue, 'deleteQueue', 'class1');
  return kind(queue, `${method.toLowerCase()}Queue`, 'class2');
}

function blobKind(method: string, segments: string[], query: URLSearchParams, headers: Readonly<Record<string, string | undefined>>): StorageRequestKind {
  const kind = (resource: string, operation: string, billing: 'write' | 'read' | 'other') => ({ service: 'blob' as const, resource, operation, billing });
  const [container, ...blobPath] = segments;
  if (!container) return kind('account', query.get('comp') === 'list' ? 'listContainers' : `${method.toLowerCase()}Account`, 'other');
  const comp = query.get('comp');
  if (comp === 'lease') {
    const action = (headers['x-ms-lease-action'] ?? 'unknown').toLowerCase();
    // Lease operations bill as writes (Put-class) on the blob price list; a break or release too.
    return kind(container, `lease.${action}`, 'write');
  }
  const isContainer = blobPath.length === 0 || query.get('restype') === 'container';
  if (isContainer) {
    if (comp === 'list') return kind(container, 'listBlobs', 'write');
    if (method === 'PUT') return kind(container, comp ? `setContainer.${comp}` : 'createContainer', 'write');
    if (method === 'DELETE') return kind(container, 'deleteContainer', 'other');
    return kind(container, 'getContainer', 'other');
  }
  if (method === 'PUT') return kind(container, comp ? `setBlob.${comp}` : 'putBlob', 'write');
  if (method === 'DELETE') return kind(container, 'deleteBlob', 'other');
  if (method === 'HEAD') return kind(container, 'getBlobProperties', 'other');
  return kind(container, comp ? `getBlob.${comp}` : 'getBlob', 'read');
}

function tableKind(method: string, segments: string[], headers: Readonly<Record<string, string | undefined>>, body: string | undefined): StorageRequestKind {
  const kind = (resource: string, operation: string) => ({ service: 'table' as const, resource, operation, billing: 'transaction' as const });
  const [first = ''] = segments;
  if (first === '$batch') return kind(batchTable(body) ?? 'unknown', 'batch');
  const open = first.indexOf('(');
  const table = open >= 0 ? first.slice(0, open) : first;
  const keyed = open >= 0 && first.slice(open + 1, -1).trim() !== '';
  if (table === 'Tables') return kind('account', method === 'POST' ? 'createTable' : method === 'DELETE' ? 'deleteTable' : 'queryTables');
  const tunnelled = (headers['x-http-method'] ?? '').toUpperCase();
  const verb = method === 'POST' && tunnelled ? tunnelled : method;
  if (verb === 'GET') return kind(table, keyed ? 'read' : 'query');
  if (verb === 'POST') return kind(table, 'insert');
  if (verb === 'PUT') return kind(table, 'replace');
  if (verb === 'MERGE' || verb === 'PATCH') return kind(table, 'merge');
  if (verb === 'DELETE') return kind(table, 'delete');
  return kind(table, verb.toLowerCase());
}

/** The table a `$batch` change set writes to: the first inner request line names it (`POST http://.../acct/Table HTTP/1.1`). */
function batchTable(body: string | undefined): string | undefined {
  const line = /\n(?:GET|POST|PUT|MERGE|PATCH|DELETE) (\S+) HTTP\/1\.1/.exec(body ?? '');
  if (!line) return undefined;
  const path = new URL(line[1], 'http://storage.local').pathname.split('/').filter(Boolean);
  const last = decodeURIComponent(path[path.length - 1] ?? '');
  const open = last.indexOf('(');
  return open >= 0 ? last.slice(0, open) : last;
}
