import {
  assertValidKey,
  InvalidKeyError,
  keyFromBusinessKey,
  keyFromCloudEvent,
  keyFromMessageId,
  MAX_CONSUMER_LENGTH,
  MAX_KEY_LENGTH,
  tableAddress,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { genLeaf, genString, Random } from '../support/generators';

/**
 * Property tests of keys over seeded, generated inputs. The model is written from the rules in
 * docs/DESIGN.md ("Keys"), with its own well-formedness check (`encodeURIComponent` throws on a lone
 * surrogate), not the implementation's. Reproduce a failure with PROPERTY_SEED=<seed>.
 */

const SEEDS = process.env.PROPERTY_SEED ? [Number(process.env.PROPERTY_SEED)] : [1, 2, 3, 4, 5];
const CASES_PER_SEED = 2000;

// ---- reference model ----------------------------------------------------------------------------

function wellFormed(s: string): boolean {
  try {
    encodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}

function validText(v: unknown, max: number): v is string {
  return typeof v === 'string' && v.trim() !== '' && v.length <= max && wellFormed(v);
}

function validConsumer(v: unknown): v is string {
  return validText(v, MAX_CONSUMER_LENGTH) && v.trim() === v;
}

/** The id a helper derives from a business key: finite numbers in decimal form. */
function idOf(v: unknown): unknown {
  return typeof v === 'number' && Number.isFinite(v) ? String(v) : v;
}

/** The id derived from a MessageId: strings only (a number is parsed text: the text that was sent is lost). */
function messageIdOf(v: unknown): unknown {
  return typeof v === 'number' ? undefined : v;
}

// ---- inputs -------------------------------------------------------------------------------------

const MIB_KEY = 'k'.repeat(1 << 20);
const nearLimits = (max: number): string[] => [
  'x'.repeat(max),
  'x'.repeat(max + 1),
  `${'y'.repeat(max - 1)}\uD800`,
  `${'z'.repeat(max - 2)}\uD83D\uDE00`,
  MIB_KEY,
];
const NEAR_LIMITS = new Map([MAX_CONSUMER_LENGTH, MAX_KEY_LENGTH].map((max) => [max, nearLimits(max)]));

/** A consumer name or key candidate: mostly strings (short, long, near the limits), sometimes anything. */
function genKeyPart(r: Random, max: number): unknown {
  switch (r.int(10)) {
    case 0:
      return genLeaf(r);
    case 1:
      return r.pick(NEAR_LIMITS.get(max)!);
    case 2:
      return r.pick([0, -0, 1, 42, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]);
    default:
      return genString(r, 4);
  }
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

function run<T>(call: () => T): Outcome<T> {
  try {
    return { ok: true, value: call() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Checks one helper call against the model: success exactly when valid, else an InvalidKeyError. */
function expectAgrees<T>(outcome: Outcome<T>, valid: boolean, what: () => string): void {
  if (!outcome.ok && !(outcome.error instanceof InvalidKeyError)) throw new Error(`raw error from ${what()}: ${String(outcome.error)}`);
  if (outcome.ok !== valid) throw new Error(`${what()} was ${outcome.ok ? 'accepted' : 'refused'}; the model says otherwise`);
}

const show = (v: unknown): string =>
  typeof v === 'string'
    ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...(${v.length})` : v)
    : typeof v === 'symbol'
      ? 'a symbol'
      : `${typeof v} ${String(v)}`;

describe.each(SEEDS)('key properties (seed %i)', (seed) => {
  const r = new Random(seed);
  const cases = Array.from({ length: CASES_PER_SEED }, () => ({
    consumer: genKeyPart(r, MAX_CONSUMER_LENGTH),
    key: genKeyPart(r, MAX_KEY_LENGTH),
    other: genKeyPart(r, MAX_KEY_LENGTH),
  }));

  test('no raw error escapes: the helpers, assertValidKey and tableAddress accept exactly what the model calls valid, else InvalidKeyError', () => {
    let valid = 0;
    for (const { consumer, key, other } of cases) {
      const label = () => `consumer ${show(consumer)}, key ${show(key)}`;
      const direct = validConsumer(consumer) && validText(key, MAX_KEY_LENGTH);
      if (direct) valid++;
      expectAgrees(
        run(() => assertValidKey({ consumer, key })),
        direct,
        () => `assertValidKey(${label()})`,
      );
      expectAgrees(
        run(() => tableAddress({ consumer, key } as IdempotencyKey)),
        direct,
        () => `tableAddress(${label()})`,
      );
      const id = idOf(key);
      expectAgrees(
        run(() => keyFromMessageId(consumer as string, key)),
        validConsumer(consumer) && validText(messageIdOf(key), MAX_KEY_LENGTH),
        () => `keyFromMessageId(${label()})`,
      );
      expectAgrees(
        run(() => keyFromBusinessKey(consumer as string, { key }, (p) => p.key)),
        validConsumer(consumer) && validText(id, MAX_KEY_LENGTH),
        () => `keyFromBusinessKey(${label()})`,
      );
      const event =
        validConsumer(consumer) && validText(key, MAX_KEY_LENGTH) && validText(other, MAX_KEY_LENGTH) && JSON.stringify([key, other]).length <= MAX_KEY_LENGTH;
      expectAgrees(
        run(() => keyFromCloudEvent(consumer as string, { source: key, id: other })),
        event,
        () => `keyFromCloudEvent(${label()}, id ${show(other)})`,
      );
    }
    expect(valid).toBeGreaterThan(CASES_PER_SEED * 0.1);
    expect(CASES_PER_SEED - valid).toBeGreaterThan(CASES_PER_SEED * 0.2);
  });

  test('no two distinct keys collide: distinct valid (consumer, key) pairs, and their look-alikes, get distinct rows', () => {
    const rows = new Map<string, string>();
    const add = (consumer: unknown, key: unknown): void => {
      if (!validConsumer(consumer) || !validText(key, MAX_KEY_LENGTH)) return;
      const identity = JSON.stringify([consumer, key]);
      const { rowKey } = tableAddress({ consumer, key });
      const earlier = rows.get(rowKey);
      if (earlier !== undefined && earlier !== identity) throw new Error(`seed ${seed}: ${earlier} and ${identity} share row ${rowKey}`);
      rows.set(rowKey, identity);
    };
    for (const { consumer, key, other } of cases) {
      add(consumer, key);
      if (typeof consumer !== 'string' || typeof key !== 'string') continue;
      // Look-alikes: the separator moved between consumer and key, the length prefix imitated,
      // another normalisation, a space more, the other part.
      add(`${consumer}:${key.slice(0, 1)}`, key.slice(1));
      add(consumer.slice(0, -1), `${consumer.slice(-1)}:${key}`);
      add(`${consumer.length}`, `${consumer}:${key}`);
      add(consumer, key.normalize('NFD'));
      add(consumer, `${key} `);
      add(consumer, other);
      add(key, consumer);
    }
    expect(rows.size).toBeGreaterThan(CASES_PER_SEED);
  });

  test('helpers are injective: distinct MessageIds and distinct (source, id) pairs give distinct keys', () => {
    // One map per helper: a consumer uses one key source (a MessageId may spell a CloudEvent pair).
    const byKey = new Map<string, string>();
    const note = (key: IdempotencyKey, from: string): void => {
      const earlier = byKey.get(key.key);
      if (earlier !== undefined && earlier !== from) throw new Error(`seed ${seed}: ${earlier} and ${from} give the same key ${JSON.stringify(key.key)}`);
      byKey.set(key.key, from);
    };
    for (const { key, other } of cases) {
      const message = run(() => keyFromMessageId('c', key));
      if (message.ok) note(message.value, `message ${JSON.stringify(messageIdOf(key))}`);
      const event = run(() => keyFromCloudEvent('c', { source: key, id: other }));
      if (event.ok) note({ consumer: 'c', key: `event:${event.value.key}` }, `event ${JSON.stringify([key, other])}`);
    }
    expect(byKey.size).toBeGreaterThan(CASES_PER_SEED * 0.2);
  });
});
