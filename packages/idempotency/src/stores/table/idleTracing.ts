import type { TableClient } from '@azure/data-tables';

/** A pipeline policy of `@azure/core-rest-pipeline`, as the Table client's pipeline takes it. */
type PipelinePolicy = Parameters<TableClient['pipeline']['addPolicy']>[0];

/** The SDK's name of the policy that starts a span per HTTP request (`@azure/core-rest-pipeline`). */
const TRACING_POLICY = 'tracingPolicy';
/** The name of the policy put in its place. */
export const IDLE_TRACING_POLICY = 'idempotencySkipIdleTracing';
/** Where `@opentelemetry/api` (major version 1) keeps its global registrations, a tracer provider under `trace`. */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

/**
 * True when an OpenTelemetry tracer provider is registered in this process: the only way the Azure SDK's spans are
 * recorded (its OpenTelemetry instrumentation, which Application Insights' distro registers, starts them through the
 * global provider; without one every span is a no-op).
 */
export function tracerRegistered(): boolean {
  const registry = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[OTEL_GLOBAL];
  return registry?.trace !== undefined;
}

/**
 * Puts the client's tracing policy behind a check made on every request: it runs as before while a tracer provider
 * is registered ({@link tracerRegistered}), and is skipped otherwise, where it would only start and end a no-op span
 * (parse and sanitise the URL, build attributes) per request. A tracer registered later is seen at the next request.
 * Changes nothing else in the pipeline; a second call on the same client does nothing.
 */
export function skipIdleTracing(client: TableClient): void {
  const policies = client.pipeline.getOrderedPolicies();
  if (policies.some((policy) => policy.name === IDLE_TRACING_POLICY)) return;
  const tracing = policies.find((policy) => policy.name === TRACING_POLICY);
  if (tracing === undefined) return;
  const guarded: PipelinePolicy = {
    name: IDLE_TRACING_POLICY,
    sendRequest: (request, next) => (tracerRegistered() ? tracing.sendRequest(request, next) : next(request)),
  };
  client.pipeline.removePolicy({ name: TRACING_POLICY });
  // Where the SDK puts its own (`createPipelineFromOptions`): after the retry phase, so each try has its span.
  client.pipeline.addPolicy(guarded, { afterPhase: 'Retry' });
}
