import { ConfigurationError } from './errors';
import type { LocalEffect } from './IdempotencyStore';
import { assertValidKey, scopedKeyString, type IdempotencyKey } from './keys';
import { MAX_LOCAL_ROWS } from './localRows';

/**
 * Property names a local row may not use, compared without case: the Table service's system
 * properties (`PartitionKey`, `RowKey`, `Timestamp`), the names the SDK maps them and the ETag to
 * (`partitionKey`, `rowKey`, `timestamp`, `etag`), and `kind`, which the store writes itself.
 * A row property with one of these names would be dropped, overwritten, or (`RowKey`) move the row.
 */
export const RESERVED_PROPERTY_NAMES: readonly string[] = ['partitionkey', 'rowkey', 'timestamp', 'etag', 'kind'];
/** A Table property name: a C# identifier of at most 255 characters (letters, digits, `_`). */
const PROPERTY_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,254}$/;
/** A local effect's name (part of its row's RowKey). */
const EFFECT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Checks a local effect's properties before anything is written.
 * @throws ConfigurationError for a reserved name (see {@link RESERVED_PROPERTY_NAMES}), an OData
 *   annotation (`odata.*`, `*@odata.*`), a name that is not a Table property name, or a value that is
 *   not a string, finite number, boolean or null (null values are left out of the row).
 */
export function validateEffectProperties(effect: LocalEffect): void {
  const properties: unknown = effect.properties;
  if (typeof properties !== 'object' || properties === null) {
    throw new ConfigurationError(
      `local effect ${JSON.stringify(effect.name)} needs a properties object, got ${properties === null ? 'null' : typeof properties}`,
    );
  }
  for (const [name, value] of Object.entries(properties)) {
    const where = `property ${JSON.stringify(name)} of local effect ${JSON.stringify(effect.name)}`;
    if (RESERVED_PROPERTY_NAMES.includes(name.toLowerCase()))
      throw new ConfigurationError(`${where} is a reserved name (${RESERVED_PROPERTY_NAMES.join(', ')}, in any case)`);
    if (/^odata\./i.test(name) || /@odata\./i.test(name)) throw new ConfigurationError(`${where} is an OData annotation, which the Table service reserves`);
    if (!PROPERTY_NAME.test(name))
      throw new ConfigurationError(`${where} is not a Table property name (letters, digits and _, not starting with a digit, at most 255)`);
    const type = value === null ? 'null' : typeof value;
    if (!['string', 'number', 'boolean', 'null'].includes(type))
      throw new ConfigurationError(`${where} is a ${type}; a row holds strings, numbers, booleans or null`);
    if (typeof value === 'number' && !Number.isFinite(value)) throw new ConfigurationError(`${where} is ${value}; a row holds finite numbers only`);
  }
}

/**
 * The effects of one write, checked before anything is written: at most {@link MAX_LOCAL_ROWS},
 * names `[A-Za-z0-9_-]{1,64}` and distinct, properties as {@link validateEffectProperties} says.
 * @throws ConfigurationError
 */
export function validateEffects(effects: readonly LocalEffect[] | undefined): readonly LocalEffect[] {
  if (!effects) return [];
  if (effects.length > MAX_LOCAL_ROWS)
    throw new ConfigurationError(`at most ${MAX_LOCAL_ROWS} local effects fit in one transaction with the marker, got ${effects.length}`);
  const names = new Set<string>();
  for (const effect of effects) {
    if (!EFFECT_NAME.test(effect.name)) throw new ConfigurationError(`local effect name ${JSON.stringify(effect.name)} must match ${EFFECT_NAME}`);
    if (names.has(effect.name)) throw new ConfigurationError(`local effect name ${JSON.stringify(effect.name)} is used twice`);
    names.add(effect.name);
    validateEffectProperties(effect);
  }
  return effects;
}

/** Checks the keys of a batch claim: each valid, none twice. @throws InvalidKeyError, ConfigurationError */
export function assertDistinctKeys(requests: readonly { readonly key: IdempotencyKey }[]): void {
  const seen = new Set<string>();
  for (const { key } of requests) {
    assertValidKey(key);
    const scoped = scopedKeyString(key);
    if (seen.has(scoped)) throw new ConfigurationError(`claimMany: key ${JSON.stringify(scoped)} is given twice; claim each key once per batch`);
    seen.add(scoped);
  }
}
