import { AzuriteProcess, freePort } from '../../azurite/AzuriteProcess';

/**
 * Before Azurite's main builds its servers: its queue and blob services' sweeps of deleted data run once a day instead
 * of every 60 s (queue) and 10 min (blob). The queue sweep removes every message deleted since the last one without
 * yielding its event loop, in time that grows with the square of their number (5,000 deleted messages paused it
 * 37.9 s; a task hub deletes 9 messages a payment). What is not swept stays in memory until the process ends.
 */
const RARE_GC_SWEEPS =
  "for (const service of ['queue', 'blob']) require(require('path').join(require('path').dirname(process.argv[1]), service, 'utils', 'constants.js')).DEFAULT_GC_INTERVAL_MS = 86400000;";

/** Azurite's blob, queue and table services in memory on free loopback ports: a Durable task hub's storage account. */
export class AzuriteStorage extends AzuriteProcess {
  static async start(): Promise<AzuriteStorage> {
    const storage = new AzuriteStorage({ blob: await freePort(), queue: await freePort(), table: await freePort() }, RARE_GC_SWEEPS);
    await storage.restart();
    return storage;
  }
}
