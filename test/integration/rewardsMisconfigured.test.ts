import { createHttpHeaders, type PipelinePolicy } from '@azure/core-rest-pipeline';
import type { TableClient } from '@azure/data-tables';
import { FailureStrikes } from '../../src/messaging/failureStrikes';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';
import { inMemoryTelemetry } from '../support/telemetry';

/**
 * Issue 44.2: a table the consumer cannot use (a role not yet propagated or a firewall: 403; the table missing: 404
 * `TableNotFound`; being deleted: 409 `TableBeingDeleted`) is a misconfiguration, not a poison event. The batch throws
 * every time (no checkpoint: the partition stops and stays stopped), no strike is counted and no event is parked, and
 * the operator is told which table answered what: metric `messages.store_misconfigured` (consumer, partitionId, table,
 * status, code) and an error log line naming them. Before, each batch failed 3 times and its events were parked
 * `repeated-failure`, then checkpointed: the stream drained into parking.
 */

const azuriteOf = useAzurite();

const cloudEvent = (id: string) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id,
  data: { paymentId: id, customerId: 'c-1', amount: 500, currency: 'EUR' },
});
const context = (sequence: number) => ({ triggerMetadata: { partitionContext: { partitionId: '3' }, sequenceNumberArray: [sequence, sequence + 1] } });

/** Answers every request of `client` as the Table service answers a refused one: `status` with its error code. */
function refuseWith(client: TableClient, status: number, code: string): void {
  const policy: PipelinePolicy = {
    name: `refuse-${status}`,
    sendRequest: async (request) => ({
      request,
      status,
      headers: createHttpHeaders({ 'content-type': 'application/json;odata=minimalmetadata', 'x-ms-error-code': code }),
      bodyAsText: JSON.stringify({ 'odata.error': { code, message: { lang: 'en-US', value: `${code}: refused` } } }),
    }),
  };
  client.pipeline.addPolicy(policy, { afterPhase: 'Retry' });
}

async function rig() {
  const table = await freshTable(azuriteOf(), 'mc');
  const parkingTable = await freshTable(azuriteOf(), 'mcp');
  const t = inMemoryTelemetry();
  const consumer = new RewardsConsumer({
    ledger: new RewardsLedger(table),
    parking: new ParkingStore(parkingTable),
    strikes: new FailureStrikes(parkingTable),
    telemetry: t.telemetry,
  });
  return { table, parkingTable, consumer, t };
}

async function rowsOf(client: TableClient): Promise<number> {
  let count = 0;
  for await (const _row of client.listEntities()) count++;
  return count;
}

describe('a misconfigured table stops the partition loudly; nothing is parked', () => {
  test('the rewards table deleted mid-stream: 404 TableNotFound, the batch throws on every retry (5), no strike, nothing parked', async () => {
    const { table, parkingTable, consumer, t } = await rig();
    expect(await consumer.handleBatch([cloudEvent('e-1'), cloudEvent('e-2')], context(0))).toMatchObject({ applied: 2 });
    await table.deleteTable();
    for (let retry = 0; retry < 5; retry++) {
      await expect(consumer.handleBatch([cloudEvent('e-3'), cloudEvent('e-4')], context(2))).rejects.toThrow(/404 TableNotFound/);
    }
    expect(await rowsOf(parkingTable)).toBe(0); // no parked event, no strike row
    expect(await t.counter('messages.store_misconfigured', { consumer: 'rewards', partitionId: '3', table: table.tableName, status: '404' })).toBe(5);
    expect(await t.counter('messages.batch_failures', { consumer: 'rewards', partitionId: '3', kind: 'misconfigured' })).toBe(5);
    const line = t.logs().find((l) => String(l.body).includes('misconfigured'));
    expect(line).toMatchObject({ severity: 'ERROR', attributes: { table: table.tableName, status: 404, code: 'TableNotFound', partitionId: '3' } });
    await t.shutdown();
  });

  test.each([
    [403, 'AuthorizationPermissionMismatch'],
    [409, 'TableBeingDeleted'],
  ])('the rewards table answers %i %s: the batch throws every time, nothing parked, the table named', async (status, code) => {
    const { table, parkingTable, consumer, t } = await rig();
    refuseWith(table, status, code);
    for (let retry = 0; retry < 4; retry++) {
      await expect(consumer.handleBatch([cloudEvent('e-1'), cloudEvent('e-2')], context(0))).rejects.toThrow(new RegExp(`${status} ${code}`));
    }
    expect(await rowsOf(parkingTable)).toBe(0);
    expect(await t.counter('messages.store_misconfigured', { table: table.tableName, status: String(status), code })).toBe(4);
    await t.shutdown();
  });

  test('the parking table missing: a key-reused event cannot be parked, the batch throws, nothing is struck, the parking table is named', async () => {
    const { table, parkingTable, consumer, t } = await rig();
    expect(await consumer.handleBatch([cloudEvent('e-1')], context(0))).toMatchObject({ applied: 1 });
    await parkingTable.deleteTable();
    const reused = { ...cloudEvent('e-1'), data: { paymentId: 'e-1', customerId: 'c-2', amount: 900, currency: 'EUR' } };
    for (let retry = 0; retry < 4; retry++) await expect(consumer.handleBatch([reused], context(1))).rejects.toThrow(/404 TableNotFound/);
    expect(await t.counter('messages.store_misconfigured', { table: parkingTable.tableName, status: '404' })).toBe(4);
    expect(await t.counter('messages.store_misconfigured', { table: table.tableName })).toBe(0);
    await t.shutdown();
  });
});
