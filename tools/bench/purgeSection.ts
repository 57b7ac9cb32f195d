import type { BenchTables } from './BenchTables';
import { purgeBench } from './purgeBench';

/** What one deletion run achieved (the shape tools/bench/purgeBench.ts returns). */
export interface PurgeFigures {
  readonly deleted: number;
  readonly roundTrips: number;
  readonly seconds: number;
  readonly perRoundTrip: number;
  readonly perSecond: number;
}

/** The expiry sweep against a raw batch-delete of the same rows (keys known, no query). */
export interface PurgeComparison {
  readonly sweep: PurgeFigures;
  readonly raw: PurgeFigures;
}

/** What a purge measurement gets: the bench's Azurite (loopback only) and its counted tables. */
export interface PurgeEnv {
  readonly connectionString: string;
  readonly tables: BenchTables;
  /** Expired records to seed and sweep. */
  readonly records: number;
}

/** A purge measurement: seeds expired records on the bench's Azurite, sweeps them, counts. */
export type PurgeMeasurement = (env: PurgeEnv) => Promise<PurgeComparison>;

/** The purge part of the report; null figures while no measurement is plugged in. */
export interface PurgeSection {
  readonly source: string | null;
  readonly sweep: PurgeFigures | null;
  readonly raw: PurgeFigures | null;
  readonly perRoundTrip: number | null;
  readonly ratioVsRaw: number | null;
  readonly note: string;
}

export const PURGE_NOT_BUILT_NOTE = 'expiry sweep not built yet';

/**
 * The one place the expiry-sweep measurement is plugged in: the project's ExpirySweeper, measured by
 * tools/bench/purgeBench.ts against raw batch deletes of the same rows (keys known, no query).
 */
export const PURGE_MEASUREMENT: { readonly source: string; readonly measure: PurgeMeasurement } | undefined = {
  source: 'tools/bench/purgeBench.ts (ExpirySweeper)',
  measure: async (env: PurgeEnv) => {
    const result = await purgeBench({ connectionString: env.connectionString, records: env.records });
    return { sweep: result, raw: result.baseline };
  },
};

/** Runs the plugged-in purge measurement, or reports it as not built. */
export async function measurePurgeSection(
  env: PurgeEnv,
  plugged: { readonly source: string; readonly measure: PurgeMeasurement } | undefined = PURGE_MEASUREMENT,
): Promise<PurgeSection> {
  if (!plugged) return { source: null, sweep: null, raw: null, perRoundTrip: null, ratioVsRaw: null, note: PURGE_NOT_BUILT_NOTE };
  const { sweep, raw } = await plugged.measure(env);
  return {
    source: plugged.source,
    sweep,
    raw,
    perRoundTrip: sweep.perRoundTrip,
    ratioVsRaw: raw.perRoundTrip > 0 ? sweep.perRoundTrip / raw.perRoundTrip : null,
    note:
      `measured by ${plugged.source}: ${sweep.deleted} expired records swept in ${sweep.roundTrips} round trips ` +
      `(${sweep.perSecond.toFixed(0)}/s); raw = the same rows deleted in batches of 100 with the keys known, ${raw.roundTrips} round trips`,
  };
}
