import type { TableClient } from '@azure/data-tables';
import { keyFromMessageId, type IdempotencyKey } from 'azure-functions-idempotency';
import type { HeldKeysSource } from 'azure-functions-idempotency/table';
import { lapsedInProgressRecords } from '../../src/lifecycle/lapsedRecords';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';

/**
 * The time phase's hold on the records of runs still going (docs/demo.md "Time phase"): what the app's reconciler does
 * each tick (`keepAlive`: the sweep's hold on every in-progress record whose run is Running), done once before the
 * phase's sweep. Without it the jump expires the records of runs started after the phase's drain and still in flight
 * (a run never outlives retention in real time), and their charges have no record at the end (the ledger check's
 * `no-record`). Lists every payments record in progress at `nowMs` and keeps those whose run is not final (`unfinishedRuns`: the
 * instance ids of the hub's runs Pending, Running or Suspended).
 */
export function liveRunsSource(
  table: TableClient,
  unfinishedRuns: () => Promise<ReadonlySet<string>>,
  options: { readonly partitionCount: number; readonly nowMs: () => number },
): HeldKeysSource {
  return {
    name: 'payments runs still going',
    async heldKeys(): Promise<readonly IdempotencyKey[]> {
      const keys: IdempotencyKey[] = [];
      const live = await unfinishedRuns();
      const records = lapsedInProgressRecords(table, { consumer: PAYMENTS_CONSUMER, partitionCount: options.partitionCount, lapsedBeforeMs: options.nowMs() });
      for await (const record of records) {
        if (live.has(chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest))))
          keys.push(keyFromMessageId(PAYMENTS_CONSUMER, record.key));
      }
      return keys;
    },
  };
}
