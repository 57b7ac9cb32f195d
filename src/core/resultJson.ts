import { IdempotencyError, ResultTooLargeError } from './errors';

/**
 * The JSON a result is stored as, or `undefined` for no result (`undefined` itself).
 * A value JSON would drop or change without a word is refused instead, at any depth: functions
 * and symbols (JSON leaves them out, or stores the whole result as "no result"), and bigints
 * (JSON cannot write them). `toJSON` is honoured (a Date is stored as its ISO string).
 * @throws IdempotencyError naming what cannot be stored and where.
 * @example resultJson({ chargeId: 'ch_1' }) // '{"chargeId":"ch_1"}'
 */
export function resultJson(result: unknown): string | undefined {
  if (result === undefined) return undefined;
  try {
    return JSON.stringify(result, function refuseUnstorable(this: unknown, key: string, value: unknown) {
      if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') {
        throw new IdempotencyError(
          `result cannot be stored: it holds a ${typeof value}${key === '' ? '' : ` at member ${JSON.stringify(key)}`}, which JSON cannot keep`,
        );
      }
      return value;
    });
  } catch (cause) {
    if (cause instanceof IdempotencyError) throw cause;
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new IdempotencyError(`result cannot be stored: it is not serializable to JSON (${reason})`, { cause });
  }
}

/** {@link resultJson}, at most `maxBytes` of UTF-8. @throws ResultTooLargeError, IdempotencyError */
export function resultJsonWithin(result: unknown, maxBytes: number): string | undefined {
  const json = resultJson(result);
  if (json === undefined) return undefined;
  const size = Buffer.byteLength(json, 'utf8');
  if (size > maxBytes) throw new ResultTooLargeError(size, maxBytes);
  return json;
}
