import type { Container } from '@azure/cosmos';
import { type Clock, StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency';
import type { HeldKeysSource } from 'azure-functions-idempotency/table';
// Internal: the Cosmos hold pass rewrites the store's documents in place (their layout, ids and calls are the store's), and counts as the Table hold does (HoldCounts).
import { rowDocument, ttlSeconds, type MarkerDocument, CosmosMarkers, scopedKeyHash, type HoldCounts } from 'azure-functions-idempotency/internal';

const MAX_ATTEMPTS = 5;
const READ = 'expiryTimer.cosmosHold.read';
const EXTEND = 'expiryTimer.cosmosHold.extend';

export interface CosmosHoldOptions {
  /** How long a held record must still live after the run (the redelivery window), as for the Table hold. */
  readonly holdMs: number;
  readonly clock: Clock;
  /** Deadline of each Cosmos call (`IDEMPOTENCY_STORE_TIMEOUT_MS`). */
  readonly callTimeoutMs: number;
  /** Told each request's charge, as the store's option of the same name (tests watch the requests with it). */
  readonly onRequestCharge?: ConstructorParameters<typeof CosmosMarkers>[2];
}

/**
 * The hold pass of the expiry timer on the Cosmos store (`IDEMPOTENCY_STORE=cosmos`): the same rule as the Table
 * hold (the `holds` of the `ExpirySweeper`, `azure-functions-idempotency/table`) with Cosmos's expiry, the documents' `ttl`. For each key the sources list whose record's
 * retention ends within `holdMs` of now, moves `retentionExpiresAtMs` to now + 2 x `holdMs` and the `ttl` of the
 * marker and of its local rows to match (`ttlSeconds`: the service counts it from this write), in one replace with
 * If-Match on the marker's `_etag` (a transactional batch with the rows). Status, lease, result, attempt and rows'
 * contents stay as they are. 412 -> re-read and decide again; a write whose answer was lost is re-read before it
 * is counted (it may have landed: then the record shows the retention it wrote).
 * There is nothing to delete on Cosmos (the service expires records by TTL), so this is the whole run for them.
 * @returns the same counts as the Table hold (`held - heldWithRecord` keys have no record).
 * @throws Error of a source (nothing is written); StoreUnavailableError / StoreRequestError (the run fails; the next tick tries again).
 */
export async function holdCosmosRecords(container: Container, sources: readonly HeldKeysSource[], options: CosmosHoldOptions): Promise<HoldCounts> {
  const recordIds = new Set<string>();
  for (const source of sources) for (const key of await source.heldKeys()) recordIds.add(scopedKeyHash(key));
  const counts: HoldCounts = { held: recordIds.size, heldWithRecord: 0, extended: 0, requests: 0 };
  const markers = new CosmosMarkers(container, options.callTimeoutMs, (charge) => {
    counts.requests++;
    options.onRequestCharge?.(charge);
  });
  for (const recordId of recordIds) await holdOne(markers, recordId, options, counts);
  return counts;
}

async function holdOne(markers: CosmosMarkers, recordId: string, options: CosmosHoldOptions, counts: HoldCounts): Promise<void> {
  let found = false;
  /** The retention a write left when its answer was lost: seen on the re-read, that write landed. */
  let mayHaveLanded: number | undefined;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const stored = await markers.readMarkerDocument(recordId, READ);
    if (!stored) return;
    if (!found) counts.heldWithRecord++;
    found = true;
    const retention = Number(stored.resource.retentionExpiresAtMs);
    if (mayHaveLanded !== undefined && retention === mayHaveLanded) {
      counts.extended++;
      return;
    }
    const nowMs = options.clock.nowMs();
    if (retention - nowMs >= options.holdMs) return;
    const retentionExpiresAtMs = Math.trunc(nowMs + 2 * options.holdMs);
    const marker = {
      ...withoutServiceProperties(stored.resource),
      retentionExpiresAtMs,
      ttl: ttlSeconds(nowMs, retentionExpiresAtMs, Number(stored.resource.leaseExpiresAtMs)),
    } as MarkerDocument;
    const names = Array.isArray(marker.localRows) ? marker.localRows.map(String) : [];
    const rows = [...(await markers.readRows(recordId, names, READ))].map(([name, properties]) => rowDocument(marker, { name, properties }));
    let written;
    try {
      written = await markers.write(marker, rows, [], 'replace', stored.etag, EXTEND);
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || !error.writeMayHaveLanded) throw error;
      mayHaveLanded = retentionExpiresAtMs;
      continue;
    }
    if ('etag' in written) {
      counts.extended++;
      return;
    }
    if ('conflict' in written && written.conflict === 'notFound') return; // expired by its TTL meanwhile
    // 412 (someone wrote it since the read): read and decide again.
  }
  throw new StoreRequestError(
    `expiry timer: the held Cosmos record ${recordId} kept changing (or its writes went unanswered); ${MAX_ATTEMPTS} tries to extend its retention failed`,
    EXTEND,
    412,
  );
}

/** A stored document without the properties the service sets (`_etag`, `_ts`, `_rid`, `_self`, `_attachments`); the store's own names never start with `_`. */
function withoutServiceProperties(resource: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(resource).filter(([name]) => !name.startsWith('_')));
}
