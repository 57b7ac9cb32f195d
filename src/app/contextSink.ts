import type { InvocationContext } from '@azure/functions';
import type { LogSink } from '../telemetry/Telemetry';

/** Sends structured log lines to an invocation's log, fields as one JSON object (never a payload). */
export function contextSink(context: InvocationContext): LogSink {
  return (level, message, fields) => {
    const defined = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    context[level](message, defined);
  };
}
