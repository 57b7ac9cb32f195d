import { randomBytes } from 'node:crypto';
import { TableClient } from '@azure/data-tables';
import { RoundTripCounter } from './RoundTripCounter';

/** A table made for one measurement, with a counter on its client. */
export interface CountedTable {
  readonly client: TableClient;
  readonly counter: RoundTripCounter;
}

/**
 * Makes fresh, uniquely named tables on one (loopback) Table endpoint, each with its own client
 * and round-trip counter. SDK default retry options: a retry is counted like any request.
 */
export class BenchTables {
  constructor(private readonly connectionString: string) {
    if (!/TableEndpoint=http:\/\/127\.0\.0\.1:\d+\//.test(connectionString)) {
      throw new Error('the benchmark only sends traffic to a loopback Azurite (TableEndpoint=http://127.0.0.1:<port>/...)');
    }
  }

  /** Creates a new table named `<prefix><random>` (the creation itself is not counted). */
  async create(prefix: string): Promise<CountedTable> {
    const client = TableClient.fromConnectionString(this.connectionString, `${prefix}${randomBytes(5).toString('hex')}`, { allowInsecureConnection: true });
    await client.createTable();
    return { client, counter: RoundTripCounter.attach(client) };
  }
}
