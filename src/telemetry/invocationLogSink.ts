import type { LogSink } from './Telemetry';

/** The log methods of an invocation (the Functions `InvocationContext` has them; a test may give some). */
export interface InvocationLog {
  info?(...args: unknown[]): void;
  warn?(...args: unknown[]): void;
  error?(...args: unknown[]): void;
  debug?(...args: unknown[]): void;
}

/**
 * Sends structured log lines to an invocation's log: the message, then the defined fields as one
 * object (never a payload). A level the context lacks is skipped.
 */
export function invocationLogSink(context: InvocationLog): LogSink {
  return (level, message, fields) => {
    if (typeof context[level] !== 'function') return;
    context[level](message, Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)));
  };
}
