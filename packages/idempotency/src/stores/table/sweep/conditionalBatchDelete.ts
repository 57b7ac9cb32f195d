import { AsyncLocalStorage } from 'node:async_hooks';
import type { TableClient } from '@azure/data-tables';

type PipelinePolicy = Parameters<TableClient['pipeline']['addPolicy']>[0];
type PipelineRequest = Parameters<PipelinePolicy['sendRequest']>[0];

/** A row to delete only if it still has the version (`etag`) that was read. */
export interface VersionedRow {
  readonly partitionKey: string;
  readonly rowKey: string;
  readonly etag: string;
}

const POLICY_NAME = 'idempotencyConditionalBatchDelete';
/** ETags of the deletes of the transaction being sent in this async context, by row address. */
const pendingEtags = new AsyncLocalStorage<ReadonlyMap<string, string>>();

/**
 * Deletes `rows` (one partition, at most 100) in one entity-group transaction, each only if its
 * ETag still matches: if any row was changed (412) or deleted (404) since it was read, the whole
 * transaction fails and nothing is deleted.
 *
 * Why this exists: `TableClient.submitTransaction` in @azure/data-tables 13.x sends every delete
 * with `If-Match: *` (its delete action takes no ETag), while the Table service honours a real
 * ETag on a delete inside a batch. A pipeline policy, installed once per client, puts each row's
 * ETag in its sub-request; it finds the ETags through `AsyncLocalStorage`, so concurrent
 * transactions on one client never see each other's. It fails closed: a delete sub-request it
 * cannot make conditional stops the request before it is sent.
 *
 * @throws the SDK's error for a failed transaction (callers classify it with `classifyStoreError`).
 */
export async function deleteRowsIfUnchanged(client: TableClient, rows: readonly VersionedRow[]): Promise<void> {
  if (rows.length === 0) return;
  installPolicy(client);
  const etags = new Map(rows.map((row) => [addressOf(row.partitionKey, row.rowKey), row.etag]));
  if (etags.size !== rows.length) throw new RangeError('a transaction may delete each row once');
  await pendingEtags.run(etags, () => client.submitTransaction(rows.map((row) => ['delete', { partitionKey: row.partitionKey, rowKey: row.rowKey }])));
}

function installPolicy(client: TableClient): void {
  if (client.pipeline.getOrderedPolicies().some((policy) => policy.name === POLICY_NAME)) return;
  client.pipeline.addPolicy(conditionalDeletePolicy);
}

const conditionalDeletePolicy: PipelinePolicy = {
  name: POLICY_NAME,
  sendRequest: (request, next) => {
    const etags = pendingEtags.getStore();
    if (etags && request.method === 'POST' && /\/\$batch(\?|$)/.test(request.url)) {
      const body = withEtags(request, etags);
      request.body = body;
      // The SDK sets Content-Length when it builds the transaction; the body just grew.
      if (request.headers.has('Content-Length')) request.headers.set('Content-Length', String(Buffer.byteLength(body, 'utf8')));
    }
    return next(request);
  },
};

const DELETE_LINE = /^DELETE \S+\(PartitionKey='((?:[^']|'')*)',RowKey='((?:[^']|'')*)'\) HTTP\/1\.1$/;
const ANY_ETAG = /^If-Match: \*$/i;

/** The batch body with `If-Match: *` of each delete replaced by its row's ETag. */
function withEtags(request: PipelineRequest, etags: ReadonlyMap<string, string>): string {
  if (typeof request.body !== 'string') throw new Error('conditional batch delete: unexpected transaction body type');
  const lines = request.body.split('\r\n');
  let current: string | undefined;
  let rewritten = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const deleteLine = DELETE_LINE.exec(line);
    if (deleteLine) {
      current = etags.get(addressOf(unquote(deleteLine[1]), unquote(deleteLine[2])));
      if (current === undefined) throw new Error('conditional batch delete: a delete in the transaction has no ETag');
      continue;
    }
    if (current !== undefined && ANY_ETAG.test(line)) {
      lines[i] = `If-Match: ${current}`;
      current = undefined;
      rewritten++;
    }
  }
  if (rewritten !== etags.size) throw new Error(`conditional batch delete: made ${rewritten} of ${etags.size} deletes conditional; refusing to send`);
  return lines.join('\r\n');
}

function unquote(odataKey: string): string {
  return decodeURIComponent(odataKey).replace(/''/g, "'");
}

function addressOf(partitionKey: string, rowKey: string): string {
  return `${partitionKey}\u0000${rowKey}`;
}
