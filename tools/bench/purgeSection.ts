import { purgeBench, type PurgeMeasurement } from './purgeBench';

/** The expiry sweep's part of the report: the project's ExpirySweeper against raw batch deletes of the same rows. */
export interface PurgeSection {
  readonly sweep: PurgeMeasurement;
  readonly raw: PurgeMeasurement;
  readonly perRoundTrip: number;
  readonly ratioVsRaw: number | null;
  readonly note: string;
}

/** Seeds `records` expired records on the bench's Azurite (loopback), sweeps them, then deletes them raw (keys known, no query). */
export async function measurePurgeSection(connectionString: string, records: number): Promise<PurgeSection> {
  const sweep = await purgeBench({ connectionString, records });
  const raw = sweep.baseline;
  return {
    sweep,
    raw,
    perRoundTrip: sweep.perRoundTrip,
    ratioVsRaw: raw.perRoundTrip > 0 ? sweep.perRoundTrip / raw.perRoundTrip : null,
    note:
      `measured by tools/bench/purgeBench.ts (ExpirySweeper): ${sweep.deleted} expired records swept in ${sweep.roundTrips} round trips ` +
      `(${sweep.perSecond.toFixed(0)}/s); raw = the same rows deleted in batches of 100 with the keys known, ${raw.roundTrips} round trips`,
  };
}
