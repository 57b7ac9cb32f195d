/**
 * The Node side of the local Durable host (`Program.cs` starts it): the Functions Node worker's part for the
 * Durable triggers. It loads the BUILT app's entry files (e.g. `dist/src/functions/payments.js`) with the
 * project's `@azure/functions-core` stand-in (`tools/local/host`), so the registrations are exactly those the
 * worker indexes in Azure, and invokes them through `@azure/functions`' own programming model (`WorkerHost`),
 * with the trigger payload the Durable extension hands an out-of-process function (a JSON string).
 *
 * Usage: `node bridge.js <entry file>...`. Protocol (JSON lines): in `{id, kind: 'list'}` or
 * `{id, kind: 'invoke', name, input}`; out, prefixed with `\u0001bridge `: `{id, ok: true, result}` or
 * `{id, ok: false, error}` (the handler's error message, as the worker reports a failed invocation).
 */
import path from 'node:path';
import { createInterface } from 'node:readline';
import { installFunctionsCore } from '../local/host/functionsCore';
import { InvocationFailedError, WorkerHost } from '../local/host/WorkerHost';

const MARKER = '\u0001bridge ';
const DURABLE_TRIGGERS = new Set(['orchestrationTrigger', 'entityTrigger', 'activityTrigger']);

installFunctionsCore();
const entries = process.argv.slice(2).map((file) => path.resolve(file));
if (entries.length === 0) throw new Error('usage: bridge.js <entry file>...');
const host = WorkerHost.load(() => {
  // The worker loads each entry file with require(): so does this stand-in.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  for (const entry of entries) require(entry);
});

function triggerOf(name: string): string {
  const registration = host.registrations.get(name);
  const trigger = registration && Object.values(registration.metadata.bindings).find((b) => DURABLE_TRIGGERS.has(b.type));
  if (!trigger) throw new Error(`no Durable function named ${name} is registered`);
  return trigger.type;
}

async function answer(request: { id: number; kind: string; name?: string; input?: string | null }): Promise<unknown> {
  if (request.kind === 'list') {
    return [...host.registrations.values()].map((f) => ({ name: f.metadata.name, bindings: f.metadata.bindings }));
  }
  const name = String(request.name);
  const binding = host.bindingName(name, triggerOf(name));
  return host.invoke(name, { inputData: [{ name: binding, data: { string: request.input ?? 'null' } }] });
}

function reply(message: object): void {
  process.stdout.write(`${MARKER}${JSON.stringify(message)}\n`);
}

/**
 * With `DURABLE_BRIDGE_TRACE_INVOCATIONS=1` (the bench), one line per finished invocation on stdout (the host passes
 * it on as a log line): `INVOCATION_TRACE {"name","startMs","durationMs","ok"}`: the executions the Functions host would bill.
 */
const INVOCATION_TRACE = 'bridge-invocation ';
const traceInvocations = process.env.DURABLE_BRIDGE_TRACE_INVOCATIONS === '1';
function trace(request: { kind: string; name?: string }, startMs: number, ok: boolean): void {
  if (traceInvocations && request.kind === 'invoke')
    process.stdout.write(`${INVOCATION_TRACE}${JSON.stringify({ name: request.name, startMs, durationMs: Date.now() - startMs, ok })}\n`);
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (!line.trim()) return;
  const request = JSON.parse(line) as { id: number; kind: string; name?: string; input?: string | null };
  const startMs = Date.now();
  answer(request).then(
    (result) => {
      trace(request, startMs, true);
      reply({ id: request.id, ok: true, result: result ?? null });
    },
    (error: unknown) => {
      trace(request, startMs, false);
      const cause = error instanceof InvocationFailedError ? error.error : error;
      // The message only: the extension reads an orchestrator's state from it (after `$OutOfProcData$:`).
      reply({ id: request.id, ok: false, error: cause instanceof Error ? cause.message : String(cause) });
    },
  );
});
// The host holds our stdin: when it ends, the host is gone.
lines.on('close', () => process.exit(0));
