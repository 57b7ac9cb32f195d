import { ConfigurationError } from './errors';
import type { LocalEffect } from './IdempotencyStore';

/**
 * A record's local rows, whatever the store: the names of the rows written with it (`localRows` on its
 * marker), at most {@link MAX_LOCAL_ROWS}, and which rows a takeover leaves stale. Pure: no I/O.
 */

/** Marker rows carry this `kind`; local-effect rows carry their own. */
export const MARKER_KIND = 'idempotency-marker';
/** Marker property listing its local rows' names, comma-separated (the sweep reads it). */
export const LOCAL_ROWS_PROPERTY = 'localRows';
/** Most local rows of one key: the marker and its rows fit one 100-action transaction. */
export const MAX_LOCAL_ROWS = 99;
/** The names listed in a marker's {@link LOCAL_ROWS_PROPERTY} (absent: none). */
export function parseLocalRows(value: unknown): string[] {
  return typeof value === 'string' && value !== '' ? value.split(',') : [];
}

/** The local rows on record after a write of `effects` to a claim holding `current`. @throws ConfigurationError past {@link MAX_LOCAL_ROWS} */
export function localRowsAfter(current: readonly string[], effects: readonly LocalEffect[]): readonly string[] {
  const names = [...current, ...effects.map((effect) => effect.name).filter((name) => !current.includes(name))];
  if (names.length > MAX_LOCAL_ROWS) throw new ConfigurationError(`a key has at most ${MAX_LOCAL_ROWS} local rows, this write would give it ${names.length}`);
  return names;
}

/**
 * The previous attempt's rows a takeover writing `written` deletes (those it does not write again).
 * @throws ConfigurationError when the writes and deletes would not fit one transaction.
 */
export function staleRowsOnTakeover(previous: readonly string[], written: readonly string[], scopedKey: string): string[] {
  const stale = previous.filter((name) => !written.includes(name));
  if (written.length + stale.length > MAX_LOCAL_ROWS) {
    throw new ConfigurationError(
      `a takeover of ${JSON.stringify(scopedKey)} must write ${written.length} local rows and delete ${stale.length} of the previous attempt: ` +
        `more than one transaction holds (a key has at most ${MAX_LOCAL_ROWS} local row names across its attempts)`,
    );
  }
  return stale;
}
