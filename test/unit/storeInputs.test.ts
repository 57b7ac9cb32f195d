import {
  ConfigurationError,
  IdempotencyError,
  InvalidKeyError,
  integerOption,
  localRowsAfter,
  MAX_LOCAL_ROWS,
  parseLocalRows,
  ResultTooLargeError,
  staleRowsOnTakeover,
  type LocalEffect,
} from 'azure-functions-idempotency/internal';
import { assertDistinctKeys, RESERVED_PROPERTY_NAMES, validateEffectProperties, validateEffects } from '../../packages/idempotency/src/protocol/localEffects';
import { leaseMsOption, requireOptionsObject } from '../../packages/idempotency/src/protocol/options';
import { resultJson, resultJsonWithin } from '../../packages/idempotency/src/protocol/resultJson';

// The checks every store runs on its inputs before anything is written (the core's protocol: local effects, local
// rows, results, options), asserted by the errors and values a caller sees.

const effect = (name: string, properties: LocalEffect['properties'] = {}): LocalEffect => ({ name, properties });
const names = (n: number, prefix = 'r') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('local effects: the properties of a row', () => {
  test('a properties value that is not an object is refused, naming the effect and what it got', () => {
    expect(() => validateEffectProperties({ name: 'order', properties: null } as unknown as LocalEffect)).toThrow(
      new ConfigurationError('local effect "order" needs a properties object, got null'),
    );
    expect(() => validateEffectProperties({ name: 'order', properties: 'x' } as unknown as LocalEffect)).toThrow(
      'local effect "order" needs a properties object, got string',
    );
  });

  test('reserved names are refused in any case, the message listing them', () => {
    expect(RESERVED_PROPERTY_NAMES).toEqual(['partitionkey', 'rowkey', 'timestamp', 'etag', 'kind']);
    for (const name of ['PartitionKey', 'rowKey', 'TIMESTAMP', 'etag', 'Kind']) {
      expect(() => validateEffectProperties(effect('order', { [name]: 1 }))).toThrow(
        `property ${JSON.stringify(name)} of local effect "order" is a reserved name (partitionkey, rowkey, timestamp, etag, kind, in any case)`,
      );
    }
  });

  test('OData annotations are refused, at the start or after an @, in any case', () => {
    for (const name of ['odata.etag', 'OData.type', 'amount@odata.type', 'x@ODATA.y']) {
      expect(() => validateEffectProperties(effect('order', { [name]: 's' }))).toThrow(
        `property ${JSON.stringify(name)} of local effect "order" is an OData annotation, which the Table service reserves`,
      );
    }
    // "odata" alone, or without the dot, is an ordinary name.
    expect(() => validateEffectProperties(effect('order', { odata: 1, odataX: 2, xodata_y: 3 }))).not.toThrow();
  });

  test('a name that is not a Table property name is refused; 255 characters, _ and digits after the first are fine', () => {
    for (const name of ['1st', 'has-dash', 'a b', 'x'.repeat(256), 'é']) {
      expect(() => validateEffectProperties(effect('order', { [name]: 1 }))).toThrow(
        `property ${JSON.stringify(name)} of local effect "order" is not a Table property name (letters, digits and _, not starting with a digit, at most 255)`,
      );
    }
    expect(() => validateEffectProperties(effect('order', { ['x'.repeat(255)]: 1, _a9: 2, Z: 3 }))).not.toThrow();
  });

  test('values: strings, finite numbers, booleans and null pass; any other type or a non-finite number is refused', () => {
    expect(() => validateEffectProperties(effect('order', { s: '', n: -1.5, z: 0, b: false, nothing: null }))).not.toThrow();
    const where = 'property "v" of local effect "order"';
    expect(() => validateEffectProperties(effect('order', { v: {} as unknown as string }))).toThrow(
      `${where} is a object; a row holds strings, numbers, booleans or null`,
    );
    expect(() => validateEffectProperties(effect('order', { v: undefined as unknown as string }))).toThrow(`${where} is a undefined;`);
    expect(() => validateEffectProperties(effect('order', { v: 1n as unknown as number }))).toThrow(`${where} is a bigint;`);
    expect(() => validateEffectProperties(effect('order', { v: NaN }))).toThrow(`${where} is NaN; a row holds finite numbers only`);
    expect(() => validateEffectProperties(effect('order', { v: -Infinity }))).toThrow(`${where} is -Infinity; a row holds finite numbers only`);
  });
});

describe('local effects: one write', () => {
  test('no effects is an empty list; valid effects come back as given', () => {
    expect(validateEffects(undefined)).toEqual([]);
    const effects = [effect('a', { v: 1 }), effect('b')];
    expect(validateEffects(effects)).toBe(effects);
  });

  test(`at most ${MAX_LOCAL_ROWS} effects: one more is refused with the count`, () => {
    expect(MAX_LOCAL_ROWS).toBe(99);
    expect(validateEffects(names(99).map((n) => effect(n)))).toHaveLength(99);
    expect(() => validateEffects(names(100).map((n) => effect(n)))).toThrow(
      new ConfigurationError('at most 99 local effects fit in one transaction with the marker, got 100'),
    );
  });

  test('names: letters, digits, _ and -, 1 to 64 characters, each once; every effect is checked, not just the first', () => {
    expect(() => validateEffects([effect('a-Z_9'), effect('x'.repeat(64))])).not.toThrow();
    for (const bad of ['', 'x'.repeat(65), 'a b', 'a~b', 'a,b']) {
      expect(() => validateEffects([effect('ok'), effect(bad)])).toThrow(`local effect name ${JSON.stringify(bad)} must match /^[A-Za-z0-9_-]{1,64}$/`);
    }
    expect(() => validateEffects([effect('a'), effect('b'), effect('a')])).toThrow(new ConfigurationError('local effect name "a" is used twice'));
    expect(() => validateEffects([effect('a'), effect('b', { PartitionKey: 'p' })])).toThrow(/"PartitionKey" of local effect "b" is a reserved name/);
  });

  test('batch keys: each is checked, none twice (by scoped key: the same key of two consumers is two keys)', () => {
    expect(() => assertDistinctKeys([{ key: { consumer: 'payments', key: 'k' } }, { key: { consumer: 'orders', key: 'k' } }])).not.toThrow();
    expect(() => assertDistinctKeys([{ key: { consumer: 'payments', key: 'k' } }, { key: { consumer: 'payments', key: ' ' } }])).toThrow(InvalidKeyError);
    expect(() =>
      assertDistinctKeys([
        { key: { consumer: 'payments', key: 'a' } },
        { key: { consumer: 'payments', key: 'b' } },
        { key: { consumer: 'payments', key: 'a' } },
      ]),
    ).toThrow(new ConfigurationError('claimMany: key "8:payments:a" is given twice; claim each key once per batch'));
  });
});

describe('local rows: the names on a marker', () => {
  test('parsed from the comma-separated property; absent, empty or not a string is none', () => {
    expect(parseLocalRows('a,b,c')).toEqual(['a', 'b', 'c']);
    expect(parseLocalRows('only')).toEqual(['only']);
    for (const none of ['', undefined, null, 7, ['a']]) expect(parseLocalRows(none)).toEqual([]);
  });

  test('after a write: the current rows, then the new names in order, each once', () => {
    expect(localRowsAfter(['a', 'b'], [effect('b'), effect('c'), effect('d')])).toEqual(['a', 'b', 'c', 'd']);
    expect(localRowsAfter([], [])).toEqual([]);
    expect(localRowsAfter(names(98), [effect('r0'), effect('new')])).toHaveLength(99);
    expect(() => localRowsAfter(names(98), [effect('new'), effect('other')])).toThrow(
      new ConfigurationError('a key has at most 99 local rows, this write would give it 100'),
    );
  });

  test("a takeover deletes the previous attempt's rows it does not write again, within one transaction", () => {
    expect(staleRowsOnTakeover(['a', 'b', 'c'], ['b', 'd'], '8:payments:k')).toEqual(['a', 'c']);
    expect(staleRowsOnTakeover(names(50, 'old'), names(49, 'new'), 'k')).toHaveLength(50);
    expect(() => staleRowsOnTakeover(names(50, 'old'), names(50, 'new'), '8:payments:k')).toThrow(
      new ConfigurationError(
        'a takeover of "8:payments:k" must write 50 local rows and delete 50 of the previous attempt: ' +
          'more than one transaction holds (a key has at most 99 local row names across its attempts)',
      ),
    );
  });
});

describe('results: what a store keeps', () => {
  test('no result is undefined; plain data is its JSON; toJSON is honoured', () => {
    expect(resultJson(undefined)).toBeUndefined();
    expect(resultJson({ chargeId: 'ch_1', n: [1, null, true], nested: { o: Object.create(null) as object } })).toBe(
      '{"chargeId":"ch_1","n":[1,null,true],"nested":{"o":{}}}',
    );
    expect(resultJson({ at: new Date(0) })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
    expect(resultJson(null)).toBe('null');
    // An undefined object member is dropped by JSON as it would be by the reader: not refused.
    expect(resultJson({ a: 1, gone: undefined })).toBe('{"a":1}');
  });

  test.each([
    ['a function at a member', { f: () => 1 }, 'result cannot be stored: it holds a function at member "f", which JSON cannot keep'],
    ['a function itself', () => 1, 'result cannot be stored: it holds a function, which JSON cannot keep'],
    ['a symbol', { s: Symbol('x') }, 'it holds a symbol at member "s"'],
    ['a bigint', { b: 1n }, 'it holds a bigint at member "b"'],
    ['NaN', { n: NaN }, 'it holds NaN (JSON writes it as null) at member "n"'],
    ['Infinity', [Infinity], 'it holds Infinity (JSON writes it as null) at member "0"'],
    ['an undefined array element', [1, undefined], 'it holds undefined as an array element or a hole (JSON writes it as null) at member "1"'],
    ['a Map', { m: new Map() }, 'it holds an object of class Map (JSON keeps only its own members: a Map or a Set as {}) at member "m"'],
    ['a class instance', { c: new (class Charge {})() }, 'it holds an object of class Charge'],
    ['an instance of an anonymous class', { c: new (class {})() }, 'it holds an object of class unknown'],
    ['a boxed string', { s: Object('x') as object }, 'it holds an object of class String'],
  ])('refused: %s, naming what and where', (_what, value, message) => {
    expect(() => resultJson(value)).toThrow(IdempotencyError);
    expect(() => resultJson(value)).toThrow(message);
  });

  test('an object without a constructor name is an object of class unknown', () => {
    const odd = Object.create({ constructor: { name: 42 } }) as object;
    expect(() => resultJson({ odd })).toThrow('it holds an object of class unknown');
  });

  test("what JSON itself cannot write (a cycle, a throwing toJSON) is refused with JSON's reason and the cause", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    let caught: unknown;
    try {
      resultJson(cycle);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(IdempotencyError);
    expect((caught as Error).message).toMatch(/^result cannot be stored: it is not serializable to JSON \(Converting circular structure to JSON/);
    expect((caught as Error).cause).toBeInstanceOf(TypeError);
    const throwsText = {
      toJSON() {
        throw 'no JSON here'; // eslint-disable-line @typescript-eslint/only-throw-error
      },
    };
    expect(() => resultJson(throwsText)).toThrow('result cannot be stored: it is not serializable to JSON (no JSON here)');
  });

  test('the bound is in UTF-8 bytes of the JSON, inclusive', () => {
    const euro = '€'.repeat(10); // 3 bytes each: the JSON "€…€" is 32 bytes
    expect(resultJsonWithin(euro, 32)).toBe(`"${euro}"`);
    expect(resultJsonWithin(undefined, 1)).toBeUndefined();
    let caught: unknown;
    try {
      resultJsonWithin(euro, 31);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ResultTooLargeError);
    expect(caught).toMatchObject({ sizeBytes: 32, maxBytes: 31, message: 'stored result is 32 bytes, more than the limit of 31 bytes' });
    expect(() => resultJsonWithin({ f: () => 1 }, 1_000)).toThrow('it holds a function');
  });
});

describe('options', () => {
  test('an integer option: both bounds included; the error names the option, its bounds and what it got', () => {
    expect(integerOption(1, 'n', 1, 3)).toBe(1);
    expect(integerOption(3, 'n', 1, 3)).toBe(3);
    expect(() => integerOption(0, 'n', 1, 3)).toThrow(new ConfigurationError('n must be an integer from 1 to 3, got 0'));
    expect(() => integerOption(4, 'n', 1, 3)).toThrow('n must be an integer from 1 to 3, got 4');
    expect(() => integerOption(1.5, 'n', 1, 3)).toThrow('got 1.5');
    expect(() => integerOption('2', 'n', 1, 3)).toThrow('got "2"');
    expect(() => integerOption({}, 'n', 1, 3)).toThrow('got an object');
    expect(() => integerOption(null, 'n', 1, 3)).toThrow('got null');
    expect(() => integerOption(undefined, 'n', 1, 3)).toThrow('got undefined');
  });

  test('a lease: 1 ms to one day, named leaseMs unless told', () => {
    expect(leaseMsOption(86_400_000)).toBe(86_400_000);
    expect(() => leaseMsOption(86_400_001)).toThrow('leaseMs must be an integer from 1 to 86400000, got 86400001');
    expect(() => leaseMsOption(0, 'heartbeat lease')).toThrow('heartbeat lease must be an integer from 1 to 86400000, got 0');
  });

  test('the options must be an object, named in the error', () => {
    const given = { a: 1 };
    expect(requireOptionsObject(given, 'X options')).toBe(given);
    expect(() => requireOptionsObject(null, 'X options')).toThrow(new ConfigurationError('X options must be an object, got null'));
    expect(() => requireOptionsObject(undefined, 'X options')).toThrow('X options must be an object, got undefined');
    expect(() => requireOptionsObject('x', 'X options')).toThrow('X options must be an object, got string');
  });
});

describe('local effects and results: the refusal names the real reason', () => {
  test('a name with "odata." inside it, not at its start, is refused as not a Table property name, not as an OData annotation', () => {
    expect(() => validateEffectProperties(effect('order', { 'xodata.y': 1 }))).toThrow(
      new ConfigurationError(
        'property "xodata.y" of local effect "order" is not a Table property name (letters, digits and _, not starting with a digit, at most 255)',
      ),
    );
  });

  test('a result JSON cannot keep is refused with the reason as it is, not wrapped in "not serializable"', () => {
    expect(() => resultJson({ f: () => 1 })).toThrow(
      new IdempotencyError('result cannot be stored: it holds a function at member "f", which JSON cannot keep'),
    );
  });
});
