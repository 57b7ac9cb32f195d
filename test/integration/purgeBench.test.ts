import { keyFromMessageId, tableAddress } from 'azure-functions-idempotency/internal';
import { purgeBench } from '../../tools/bench/purgeBench';
import { useAzurite } from '../support/azurite';

const azuriteOf = useAzurite();

test('purge bench: deletes every record and reports round trips of the sweep and of raw batch deletes', async () => {
  const r = await purgeBench({ connectionString: azuriteOf().connectionString, records: 3_000 });
  console.log(
    `purge of ${r.records} records: sweep ${r.roundTrips} round trips (${r.perRoundTrip.toFixed(1)}/trip), ${r.seconds.toFixed(2)} s, ${r.perSecond.toFixed(0)}/s; ` +
      `raw batches ${r.baseline.roundTrips} round trips (${r.baseline.perRoundTrip.toFixed(1)}/trip), ${r.baseline.seconds.toFixed(2)} s, ${r.baseline.perSecond.toFixed(0)}/s`,
  );
  expect(r.deleted).toBe(3_000);
  expect(r.baseline.deleted).toBe(3_000);
  const perPartition = new Map<string, number>();
  for (let i = 0; i < 3_000; i++) {
    const { partitionKey } = tableAddress(keyFromMessageId('bench', `m-${i}`), 16);
    perPartition.set(partitionKey, (perPartition.get(partitionKey) ?? 0) + 1);
  }
  const batches = [...perPartition.values()].reduce((sum, n) => sum + Math.ceil(n / 100), 0);
  const pages = [...perPartition.values()].reduce((sum, n) => sum + Math.max(1, Math.ceil(n / 1000)), 0);
  // Exactly: one query page per partition (each holds < 1000), one batch per 100, checkpoint read + write.
  expect(r.roundTrips).toBe(pages + batches + 2);
  expect(r.baseline.roundTrips).toBe(batches);
});
