import { createRequire } from 'node:module';
import type { TableClient } from '@azure/data-tables';

/** A pipeline policy of `@azure/core-rest-pipeline`, as the Table client's pipeline takes it. */
type PipelinePolicy = Parameters<TableClient['pipeline']['addPolicy']>[0];
type PipelineRequest = Parameters<PipelinePolicy['sendRequest']>[0];

/** What a guard knows of the client: whether its log policy would log (its logger's `enabled`). */
interface Context {
  readonly logEnabled: () => boolean;
}

/**
 * The SDK's policies that do nothing for most requests, each with the condition under which it does nothing
 * (read from `@typespec/ts-http-runtime` / `@azure/core-rest-pipeline` 1.24's code):
 * - `logPolicy`: logs only while its logger (`@azure/data-tables`' `info`, which `TableClient` always gives it) is enabled;
 * - `formDataPolicy`: converts only a `FormData` body or a request's `formData` (a string body or none is left alone);
 * - `multipartPolicy`: builds only a request's `multipartBody`;
 * - `wrapAbortSignalLikePolicy`: wraps only a signal that is not an `AbortSignal` (one that is, it passes on as it is).
 */
const GUARDS: Record<string, (request: PipelineRequest, context: Context) => boolean> = {
  logPolicy: (_, context) => !context.logEnabled(),
  formDataPolicy: (request) => request.formData === undefined && (request.body === undefined || request.body === null || typeof request.body === 'string'),
  multipartPolicy: (request) => !request.multipartBody,
  wrapAbortSignalLikePolicy: (request) => !request.abortSignal || request.abortSignal instanceof AbortSignal,
};
/** The guards put in place (a second call on the same client leaves them as they are). */
const guarded = new WeakSet<PipelinePolicy>();

/**
 * Puts each of {@link GUARDS}' policies in the client's pipeline behind its condition, checked on every request: the
 * policy runs as before whenever it would do anything, and is skipped (no async layer of its own: a promise and its
 * hooks per request) when it would only pass the request on. Each keeps its place in the pipeline (same phase, same
 * neighbours, same name). Does nothing when the logger cannot be found as `@azure/data-tables` resolves it; a second call on the
 * same client does nothing.
 */
export function skipIdlePolicies(client: TableClient): void {
  const logEnabled = tablesLogEnabled();
  if (!logEnabled) return;
  const context: Context = { logEnabled };
  const pipeline = client.pipeline as TableClient['pipeline'] & { _policies?: { policy: PipelinePolicy }[] };
  // The pipeline keeps its policies with their placement options; the guard replaces the policy in its descriptor.
  const descriptors = pipeline._policies;
  if (!Array.isArray(descriptors)) return;
  for (const descriptor of descriptors) {
    const policy = descriptor.policy;
    const idle = Object.prototype.hasOwnProperty.call(GUARDS, policy.name) ? GUARDS[policy.name] : undefined;
    if (!idle || guarded.has(policy)) continue;
    // Under the policy's own name: what orders itself before or after it, or removes it by name, finds it as before.
    const guard: PipelinePolicy = {
      name: policy.name,
      sendRequest: (request, next) => (idle(request, context) ? next(request) : policy.sendRequest(request, next)),
    };
    guarded.add(guard);
    descriptor.policy = guard;
  }
  // The pipeline caches its ordered policies: a removal (of nothing) drops the cache.
  pipeline.removePolicy({ name: '\u0000 no such policy' });
}

let logLoaded: (() => boolean) | null | undefined;

/** Whether `@azure/data-tables`' `info` logger (its log policy's) is enabled, as `@azure/logger` decides it, or null. */
function tablesLogEnabled(): (() => boolean) | null {
  if (logLoaded === undefined) {
    try {
      const fromTables = createRequire(require.resolve('@azure/data-tables'));
      const { createClientLogger } = fromTables('@azure/logger') as { createClientLogger(this: void, name: string): { info: { enabled: boolean } } };
      // Same namespace (`azure:data-tables:info`) and same `debug` context: enabled exactly when the SDK's logger is.
      const info = createClientLogger('data-tables').info;
      logLoaded = typeof info.enabled === 'boolean' ? () => info.enabled : null;
    } catch {
      logLoaded = null;
    }
  }
  return logLoaded;
}
