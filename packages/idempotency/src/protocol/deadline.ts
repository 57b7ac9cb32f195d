import { StoreUnavailableError } from './errors';

/** Default deadline of one store call (SDK retries included), in milliseconds: the stores' `callTimeoutMs` default. */
export const DEFAULT_STORE_TIMEOUT_MS = 5_000;

/** What a store call does: a read that gets no answer decided nothing; a write may have landed. */
export type StoreCallKind = 'read' | 'write';

/**
 * Runs one store call under a deadline. `call` receives an `abortSignal` to hand to the SDK (it
 * aborts the request and any retry); whatever the SDK does with it, the returned promise settles
 * by the deadline. The stores run every SDK call through it; run your own calls beside them (your rows, side
 * tables) through it too, and they fail as the store's do.
 *
 * ```ts
 * await withDeadline(5_000, 'claim', 'write', (abortSignal) => client.createEntity(entity, { abortSignal }));
 * ```
 * @throws StoreUnavailableError (retryable) when `timeoutMs` passes first; its message and
 *   `writeMayHaveLanded` say what may have been decided (`storeName` names the store in it). Other failures of `call` pass through.
 */
export async function withDeadline<T>(
  timeoutMs: number,
  operation: string,
  kind: StoreCallKind,
  call: (abortSignal: AbortSignal) => Promise<T>,
  storeName = 'table store',
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = deadlineError(timeoutMs, operation, kind, storeName);
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([call(controller.signal), expired]);
  } catch (error) {
    // The SDK answers an abort with its own AbortError: report the deadline instead.
    if (controller.signal.aborted) throw controller.signal.reason as StoreUnavailableError;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The error a call that missed its deadline fails with: what may have been decided, by `kind`. */
export function deadlineError(timeoutMs: number, operation: string, kind: StoreCallKind, storeName: string): StoreUnavailableError {
  const decided =
    kind === 'read'
      ? 'it was a read: nothing was decided'
      : 'it was a write: it may have landed (a key may stay claimed until its lease lapses); a retry finds out';
  return new StoreUnavailableError(
    `${storeName} did not answer ${operation} within ${timeoutMs} ms; ${decided}; retry later`,
    operation,
    undefined,
    kind === 'write',
  );
}
