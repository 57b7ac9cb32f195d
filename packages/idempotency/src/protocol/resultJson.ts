import { IdempotencyError, ResultTooLargeError } from './errors';

/**
 * What JSON would drop or change without a word, or `undefined` for a value it keeps as it is
 * (after `toJSON`, which is honoured: a Date is stored as its ISO string).
 */
function unstorable(holder: unknown, value: unknown): string | undefined {
  if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') return `a ${typeof value}`;
  if (typeof value === 'number' && !Number.isFinite(value)) return `${String(value)} (JSON writes it as null)`;
  if (value === undefined && Array.isArray(holder)) return 'undefined as an array element or a hole (JSON writes it as null)';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype === Object.prototype || prototype === null) return undefined;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return `an object of class ${typeof name === 'string' && name !== '' ? name : 'unknown'} (JSON keeps only its own members: a Map or a Set as {})`;
}

/**
 * The JSON a result is stored as, or `undefined` for no result (`undefined` itself).
 * A value JSON would drop or change without a word is refused instead, at any depth: functions,
 * symbols and bigints; `NaN` and `±Infinity` (they would replay as `null`); `undefined` array
 * elements and holes (also `null`); objects other than plain objects and arrays (`Map`, `Set`,
 * `RegExp`, typed arrays, class instances, boxed primitives: JSON would keep `{}` or a changed form).
 * `toJSON` is honoured (a Date is stored as its ISO string, a Buffer as `{ type, data }`).
 * @throws IdempotencyError naming what cannot be stored and where.
 * @example resultJson({ chargeId: 'ch_1' }) // '{"chargeId":"ch_1"}'
 */
export function resultJson(result: unknown): string | undefined {
  if (result === undefined) return undefined;
  try {
    return JSON.stringify(result, function refuseUnstorable(this: unknown, key: string, value: unknown) {
      const what = unstorable(this, value);
      if (what !== undefined) {
        throw new IdempotencyError(`result cannot be stored: it holds ${what}${key === '' ? '' : ` at member ${JSON.stringify(key)}`}, which JSON cannot keep`);
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
