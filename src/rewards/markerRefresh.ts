import type { TableClient } from '@azure/data-tables';
import { withDeadline } from 'azure-functions-idempotency';
import { classifyStoreError, toDomainError } from 'azure-functions-idempotency/table';
import type { IdentityIndex } from './identityIndex';

/** A duplicate copy enqueued this much later than its marker's time moves the marker forward (less: not worth a write). */
export const REFRESH_AFTER_MS = 86_400_000;

/**
 * Whether a duplicate copy must carry its marker forward: a marker is swept `REWARDS_MARKER_RETENTION_DAYS` after its
 * `appliedAtMs`, and a copy enqueued at `enqueuedAtMs` can be read again until then + the hub's retention (a replay
 * from an older checkpoint, a reader that stalled). Markers aged from the first apply: a producer's resend enqueued on
 * day 6 and read again after day 8 was applied twice. Without an enqueue time nothing is refreshed.
 */
export function needsRefresh(markerAtMs: number, enqueuedAtMs: number | undefined): boolean {
  return enqueuedAtMs !== undefined && Number.isFinite(markerAtMs) && enqueuedAtMs - markerAtMs > REFRESH_AFTER_MS;
}

/**
 * Moves the markers of `copies` (duplicates: marker RowKey and the copy's enqueue time) and their identity rows to their copies' enqueue times (`appliedAtMs`,
 * which the sweep reads; the position and digest still say where and what was applied). Merge
 * writes without `If-Match`: a later time only ever replaces an earlier one here, and a row swept meanwhile (404) is
 * left alone (it was past retention). @throws StoreUnavailableError or StoreRequestError
 */
export async function refreshMarkers(
  client: TableClient,
  partitionKey: string,
  copies: ReadonlyArray<{ readonly marker: string; readonly enqueuedAtMs: number }>,
  identities: IdentityIndex,
  timeoutMs: number,
): Promise<void> {
  const writes = copies.flatMap(({ marker: rowKey, enqueuedAtMs }) => {
    const appliedAtMs = { value: String(Math.trunc(enqueuedAtMs)), type: 'Int64' as const };
    return [
      { client, entity: { partitionKey, rowKey, appliedAtMs } },
      { client: identities.client, entity: { partitionKey: identities.partitionOf(rowKey), rowKey, appliedAtMs } },
    ];
  });
  await Promise.all(
    writes.map(async ({ client: target, entity }) => {
      try {
        await withDeadline(timeoutMs, 'refreshMarker', 'write', (abortSignal) => target.updateEntity(entity, 'Merge', { etag: '*', abortSignal }));
      } catch (error) {
        if (classifyStoreError(error, 'refreshMarker', 'write') !== 'notFound') throw toDomainError(error, 'refreshMarker', 'write');
      }
    }),
  );
}
