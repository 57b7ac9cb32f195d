import { TableClient } from '@azure/data-tables';
import { randomBytes } from 'node:crypto';
import type { AzuriteTable } from './azurite';
import { withTableLimits } from './tableLimits';

/**
 * A TableClient on a fresh, uniquely named table of the given Azurite; retries kept short. It holds Azure's Table
 * limits that Azurite does not (`tableLimits.ts`): an entity or transaction Azure would refuse is refused here (400).
 */
export async function freshTable(azurite: AzuriteTable, prefix = 't'): Promise<TableClient> {
  const name = `${prefix}${randomBytes(6).toString('hex')}`;
  const client = TableClient.fromConnectionString(azurite.connectionString, name, {
    allowInsecureConnection: true,
    retryOptions: { maxRetries: 1, retryDelayInMs: 50, maxRetryDelayInMs: 200 },
  });
  await client.createTable();
  return withTableLimits(client);
}

/** A settable clock for tests. */
export class FakeClock {
  constructor(public now = 1_800_000_000_000) {}
  nowMs(): number {
    return this.now;
  }
  advance(ms: number): void {
    this.now += ms;
  }
}
