import { randomUUID } from 'node:crypto';
import type { Clock } from '../../protocol/clock';
import type { CompletedKeyCache } from '../../protocol/CompletedKeyCache';
import { markerDocument, rowDocument, type CosmosMarkerFields, type CosmosMarkerState } from './cosmosDocuments';
import type { CosmosMarkers, CosmosWriteMode } from './CosmosMarkers';
import { StoreUnavailableError } from '../../protocol/errors';
import type { ClaimOutcome, LocalEffect } from '../../protocol/IdempotencyStore';
import { scopedKeyString, type IdempotencyKey } from '../../protocol/keys';
import { markerToRecord } from './cosmosDocuments';
import { RecordStatus, type IdempotencyRecord } from '../../protocol/record';
import { decideClaim, generationAfterTakeover } from '../../protocol/recordRules';
import { staleRowsOnTakeover } from '../../protocol/localRows';
import { MAX_UNRESOLVED_CLAIMS } from '../../protocol/storeOptions';

/** A claim write that landed: the record as written, and the one it replaced (a takeover). */
export type CosmosAcquired = { kind: 'acquired'; record: IdempotencyRecord; previous?: IdempotencyRecord };
/** What an acquisition that did not write found instead. */
export type CosmosNotAcquired = Extract<ClaimOutcome, { kind: 'duplicate' | 'inProgress' | 'keyReused' }>;
/** What the marker of a new claim (or commit) holds, at `nowMs`, for `ownerId` at `attempt`. */
export type CosmosStateOf = (nowMs: number, ownerId: string, attempt: number) => Omit<CosmosMarkerState, 'localRows'>;

/** One claim (or commit) to make. */
export interface CosmosAcquireRequest {
  readonly key: IdempotencyKey;
  readonly recordId: string;
  readonly digest: string;
  readonly effects: readonly LocalEffect[];
  readonly state: CosmosStateOf;
  /** Read the record before creating it (a redelivery): a completed duplicate then costs one round trip. */
  readonly readFirst: boolean;
  /** See `ClaimOptions.keepLapsedInProgress`. */
  readonly keepLapsedInProgress?: boolean;
}

/**
 * The Cosmos store's claim workflow, the same as the Table store's (`tableAcquire.ts`): create the marker
 * (with its rows, in one transactional batch) or take an existing record over with If-Match on its
 * `_etag` (the previous attempt's rows it does not write again deleted in the same batch). Same decision
 * rules, same own-write recognition by owner id, same truth about a write whose every answer was lost.
 */
export class CosmosClaimWorkflow {
  /** Scoped key -> owner id of a claim of ours whose write may have landed unseen. */
  private readonly unresolvedClaims = new Map<string, string>();

  constructor(
    private readonly markers: CosmosMarkers,
    private readonly clock: Clock,
    private readonly cache: CompletedKeyCache | undefined,
    private readonly fields: (key: IdempotencyKey, recordId: string, digest: string, createdAtMs: number, nowMs: number) => CosmosMarkerFields,
  ) {}

  async acquire(request: CosmosAcquireRequest): Promise<CosmosAcquired | CosmosNotAcquired> {
    const { key, recordId, digest, effects, state } = request;
    const scoped = scopedKeyString(key);
    const localRows = effects.map((effect) => effect.name);
    const ownerId = randomUUID();
    let tookOverFrom: IdempotencyRecord | undefined;
    let existing = request.readFirst ? await this.markers.read(recordId, 'claim') : undefined;
    for (let round = 0; round < 5; round++) {
      if (!existing) {
        const now = this.clock.nowMs();
        const fresh = markerDocument(this.fields(key, recordId, digest, now, now), { ...state(now, ownerId, 1), localRows });
        const written = await this.write(scoped, fresh, effects, [], 'create', undefined, ownerId, undefined);
        if ('record' in written) return written;
        existing = await this.markers.read(recordId, 'claim');
        if (!existing) continue; // gone between our create and our read: create again
      }
      if (existing.ownerId === ownerId) return this.acquired(scoped, { kind: 'acquired', record: existing, previous: tookOverFrom });
      let decision = decideClaim(existing, digest, this.clock.nowMs(), scoped);
      if (decision === 'inProgress' && this.unresolvedClaims.get(scoped) === existing.ownerId) decision = 'takeover';
      if (decision === 'duplicate') {
        this.cache?.put(scoped, existing);
        return { kind: 'duplicate', record: existing, cached: false };
      }
      if (decision === 'keyReused') return { kind: 'keyReused', record: existing, digest, cached: false };
      if (decision === 'inProgress' || (decision === 'takeover' && request.keepLapsedInProgress && existing.status === RecordStatus.InProgress))
        return { kind: 'inProgress', record: existing };
      tookOverFrom = existing;
      const stale = staleRowsOnTakeover(existing.localRows, localRows, scoped);
      const now = this.clock.nowMs();
      const createdAtMs = generationAfterTakeover(decision, existing, now);
      const taken = markerDocument(this.fields(key, recordId, digest, createdAtMs, now), { ...state(now, ownerId, existing.attempt + 1), localRows });
      const written = await this.write(scoped, taken, effects, stale, 'replace', existing.etag, ownerId, existing);
      if ('record' in written) return written;
      existing = await this.markers.read(recordId, 'claim');
    }
    throw new StoreUnavailableError(`claim of ${JSON.stringify(scoped)} kept racing with other writers; retry later`, 'claim');
  }

  /** True when `ownerId` is a claim of ours on `scoped` whose write may have landed unseen. */
  isUnresolved(scoped: string, ownerId: string): boolean {
    return this.unresolvedClaims.get(scoped) === ownerId;
  }

  /**
   * Writes a claim's marker (and rows); a stale row already gone (deleted by hand) is left out and the batch
   * sent again. `{ lost: true }` when the marker's condition failed (the caller reads and decides again).
   */
  private async write(
    scoped: string,
    marker: ReturnType<typeof markerDocument>,
    effects: readonly LocalEffect[],
    stale: readonly string[],
    mode: CosmosWriteMode,
    etag: string | undefined,
    ownerId: string,
    previous: IdempotencyRecord | undefined,
  ): Promise<CosmosAcquired | { lost: true }> {
    let deletes = [...stale];
    const rows = effects.map((effect) => rowDocument(marker, effect));
    for (;;) {
      let written;
      try {
        written = await this.markers.write(marker, rows, deletes, mode, etag, mode === 'create' ? 'claim' : 'takeover');
      } catch (error) {
        if (error instanceof StoreUnavailableError) return this.resolveUnknownWrite(scoped, marker.recordId, ownerId, previous, etag, error);
        throw error;
      }
      if ('etag' in written) return this.acquired(scoped, { kind: 'acquired', record: markerToRecord({ ...marker }, written.etag), previous });
      if ('conflict' in written) return { lost: true };
      deletes = deletes.filter((name) => !written.missingRows.includes(name));
    }
  }

  private acquired<T>(scoped: string, outcome: T): T {
    this.unresolvedClaims.delete(scoped);
    return outcome;
  }

  /**
   * After a claim write failed without an answer: read the record. Our owner id -> the claim is ours. Nothing
   * of ours, while the write's condition can still hold (create: still absent; takeover: still at the ETag it
   * was conditioned on) -> it may still land: say so and remember the owner id (this store's next claim of the
   * key takes it over at once). A write that was sent but whose condition can no longer hold (another record is
   * there, or its ETag moved) -> `lost`, decided on the record as after a 409/412 (the Table SDK's retry gets
   * there the same way). A request refused before it was sent -> nothing was decided.
   */
  private async resolveUnknownWrite(
    scoped: string,
    recordId: string,
    ownerId: string,
    previous: IdempotencyRecord | undefined,
    conditionEtag: string | undefined,
    failure: StoreUnavailableError,
  ): Promise<CosmosAcquired | { lost: true }> {
    let current: IdempotencyRecord | undefined;
    try {
      current = await this.markers.read(recordId, 'claim');
    } catch {
      if (!failure.writeMayHaveLanded) throw failure;
      this.remember(scoped, ownerId);
      throw new StoreUnavailableError(
        `cosmos store unavailable during claim of ${JSON.stringify(scoped)} (${failure.message}), and the read-back got no answer either: this claim may have been written; ` +
          'if so the key stays in progress until its lease lapses (this process takes it over on its next claim); retry later',
        'claim',
        failure.cause,
        true,
      );
    }
    if (current?.ownerId === ownerId) return this.acquired(scoped, { kind: 'acquired', record: current, previous });
    const mayStillLand = failure.writeMayHaveLanded && (conditionEtag === undefined ? current === undefined : current?.etag === conditionEtag);
    if (mayStillLand) {
      this.remember(scoped, ownerId);
      throw new StoreUnavailableError(
        `cosmos store did not answer the claim of ${JSON.stringify(scoped)} in time (${failure.message}); the read-back found nothing of ours, ` +
          'which proves nothing about a request still in flight: this claim may still land, and then the key stays in progress until ' +
          'its lease lapses (this process takes it over on its next claim); retry later',
        'claim',
        failure.cause,
        true,
      );
    }
    // The request was sent and its condition can no longer hold: as after a 409 or 412, decide on what is there.
    if (failure.writeMayHaveLanded) return { lost: true };
    throw new StoreUnavailableError(
      `cosmos store unavailable during claim of ${JSON.stringify(scoped)} (${failure.message}); read back: this claim was not written ` +
        'and can no longer land, nothing was decided; retry later',
      'claim',
      failure.cause,
    );
  }

  private remember(scoped: string, ownerId: string): void {
    if (this.unresolvedClaims.size >= MAX_UNRESOLVED_CLAIMS) this.unresolvedClaims.delete(this.unresolvedClaims.keys().next().value as string);
    this.unresolvedClaims.set(scoped, ownerId);
  }
}
