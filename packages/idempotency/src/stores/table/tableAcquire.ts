import { randomUUID } from 'node:crypto';
import type { Clock } from '../../protocol/clock';
import type { CompletedKeyCache } from '../../protocol/CompletedKeyCache';
import { StoreUnavailableError } from '../../protocol/errors';
import type { ClaimOutcome, LocalEffect } from '../../protocol/IdempotencyStore';
import { scopedKeyString, type IdempotencyKey } from '../../protocol/keys';
import type { MarkerTable } from './MarkerTable';
import { RecordStatus, type IdempotencyRecord } from '../../protocol/record';
import { decideClaim, generationAfterTakeover } from '../../protocol/recordRules';
import type { TableAddress } from './partitions';
import { staleRowsOnTakeover } from '../../protocol/localRows';
import { markerEntity, writtenRecord, type MarkerFields, type MarkerState } from './tableRows';
import { MAX_UNRESOLVED_CLAIMS } from '../../protocol/storeOptions';

/** A claim write that landed: the record as written, and the one it replaced (a takeover). */
export type Acquired = { kind: 'acquired'; address: TableAddress; record: IdempotencyRecord; previous?: IdempotencyRecord };
/** What an acquisition that did not write found instead. */
export type NotAcquired = Extract<ClaimOutcome, { kind: 'duplicate' | 'inProgress' | 'keyReused' }>;

/** What the marker of a new claim (or commit) holds, at `nowMs`, for `ownerId` at `attempt`. */
export type StateOf = (nowMs: number, ownerId: string, attempt: number) => Omit<MarkerState, 'localRows'>;

/** One claim (or commit) to make: the key, its address and digest, its effects and the state to write. */
export interface AcquireRequest {
  readonly key: IdempotencyKey;
  readonly address: TableAddress;
  readonly digest: string;
  readonly effects: readonly LocalEffect[];
  readonly state: StateOf;
  /** Read the record before inserting (a redelivery): a completed duplicate then costs one round trip. */
  readonly readFirst: boolean;
  /** See `ClaimOptions.keepLapsedInProgress`. */
  readonly keepLapsedInProgress?: boolean;
}

/**
 * The Table store's claim workflow: insert the marker (with effects, in one transaction) or take an
 * existing record over. Loops only when the record changed between our failed write and our read (bounded).
 *
 * With `readFirst` the record is read before anything is written: present -> decided at once (a completed
 * duplicate or a reused key costs 1 round trip instead of 2; a takeover skips the failing insert);
 * absent -> inserted as usual (2 round trips for a claim whose redelivery finds nothing).
 *
 * Local rows: a fresh insert overwrites leftover rows of the same names (a previous lifetime's, if any
 * survived); a takeover writes the new attempt's rows and deletes the previous attempt's rows it does not
 * write again, in the same transaction, so a record's rows are always exactly those its marker lists.
 *
 * An insert or takeover whose every answer was lost (the SDK's retries ended in a network failure) is
 * resolved by reading the record: ours -> the claim is ours; not ours -> nothing of ours landed and the
 * error is thrown as is. When even the read fails, the error says the claim may have landed, and this
 * store takes it over on its next claim of the key.
 */
export class TableClaimWorkflow {
  /** Scoped key -> owner id of a claim of ours whose insert may have landed unseen. */
  private readonly unresolvedClaims = new Map<string, string>();

  constructor(
    private readonly table: MarkerTable,
    private readonly clock: Clock,
    private readonly cache: CompletedKeyCache | undefined,
    private readonly fields: (key: IdempotencyKey, address: TableAddress, digest: string, createdAtMs: number, nowMs: number) => MarkerFields,
  ) {}

  async acquire(request: AcquireRequest): Promise<Acquired | NotAcquired> {
    const { key, address, digest, effects, state } = request;
    const scoped = scopedKeyString(key);
    const localRows = effects.map((effect) => effect.name);
    // One owner id for the whole call: a write of ours whose answer was lost is recognised by it.
    const ownerId = randomUUID();
    let tookOverFrom: IdempotencyRecord | undefined;
    let existing = request.readFirst ? await this.table.read(address) : undefined;
    for (let round = 0; round < 5; round++) {
      if (!existing) {
        const now = this.clock.nowMs();
        const freshFields = this.fields(key, address, digest, now, now);
        const freshState: MarkerState = { ...state(now, ownerId, 1), localRows };
        try {
          const written = await this.table.write(markerEntity(freshFields, freshState), effects, [], 'create', undefined, 'claim');
          if ('etag' in written) return this.acquired(scoped, { kind: 'acquired', address, record: writtenRecord(freshFields, freshState, written.etag) });
        } catch (error) {
          if (error instanceof StoreUnavailableError) return this.resolveUnknownWrite(scoped, address, ownerId, tookOverFrom, undefined, error);
          throw error;
        }
        existing = await this.table.read(address);
        if (!existing) continue; // deleted between our insert and our read: insert again
      }
      if (existing.ownerId === ownerId) {
        // Our insert landed but its answer was lost (the SDK retried it): the claim is ours.
        return this.acquired(scoped, { kind: 'acquired', address, record: existing, previous: tookOverFrom });
      }
      let decision = decideClaim(existing, digest, this.clock.nowMs(), scoped);
      if (decision === 'inProgress' && this.unresolvedClaims.get(scoped) === existing.ownerId) {
        // A claim of ours whose outcome we could not learn: nobody works on it, take it over now.
        decision = 'takeover';
      }
      if (decision === 'duplicate') {
        this.cache?.put(scoped, existing);
        return { kind: 'duplicate', record: existing, cached: false };
      }
      if (decision === 'keyReused') return { kind: 'keyReused', record: existing, digest, cached: false };
      if (decision === 'inProgress' || (decision === 'takeover' && request.keepLapsedInProgress && existing.status === RecordStatus.InProgress))
        return { kind: 'inProgress', record: existing };
      tookOverFrom = existing;
      const staleRows = staleRowsOnTakeover(existing.localRows, localRows, scoped);
      const takeoverNow = this.clock.nowMs();
      // The takeover of an expired record starts a new lifetime (generation); any other keeps it.
      const createdAtMs = generationAfterTakeover(decision, existing, takeoverNow);
      const takenFields = this.fields(key, address, digest, createdAtMs, takeoverNow);
      const takenState: MarkerState = { ...state(takeoverNow, ownerId, existing.attempt + 1), localRows };
      try {
        const written = await this.table.write(markerEntity(takenFields, takenState), effects, staleRows, 'replace', existing.etag, 'takeover');
        if ('etag' in written)
          return this.acquired(scoped, { kind: 'acquired', address, record: writtenRecord(takenFields, takenState, written.etag), previous: existing });
        // Another claimant took it over first (412) or it was deleted (404): look again.
      } catch (error) {
        if (error instanceof StoreUnavailableError) return this.resolveUnknownWrite(scoped, address, ownerId, existing, existing.etag, error);
        throw error;
      }
      existing = await this.table.read(address);
    }
    throw new StoreUnavailableError(`claim of ${JSON.stringify(scoped)} kept racing with other writers; retry later`, 'claim');
  }

  private acquired<T>(scoped: string, outcome: T): T {
    this.unresolvedClaims.delete(scoped);
    return outcome;
  }

  /**
   * After a claim write failed without an answer: learn whether it landed (see {@link TableClaimWorkflow}).
   * A read-back that finds our owner id: the claim is ours. One that finds nothing of ours proves nothing
   * about a request still in flight: the write may still land as long as its condition can still hold
   * (an insert: the key is still absent; a takeover: the record still has the ETag it was conditioned on,
   * `conditionEtag`). Then the error says the write may have landed and the owner id is remembered, so
   * this store's next claim of the key takes such a record over at once (another process waits for its
   * lease). Only a failure that says nothing was sent, or a condition that can no longer hold, is
   * "nothing was decided".
   */
  private async resolveUnknownWrite(
    scoped: string,
    address: TableAddress,
    ownerId: string,
    previous: IdempotencyRecord | undefined,
    conditionEtag: string | undefined,
    failure: StoreUnavailableError,
  ): Promise<Acquired> {
    let current: IdempotencyRecord | undefined;
    try {
      current = await this.table.read(address);
    } catch {
      if (!failure.writeMayHaveLanded) throw failure;
      this.remember(scoped, ownerId);
      throw new StoreUnavailableError(
        `table store unavailable during claim of ${JSON.stringify(scoped)} (${failure.message}), and the read-back got no answer either: this claim may have been written; ` +
          'if so the key stays in progress until its lease lapses (this process takes it over on its next claim); retry later',
        'claim',
        failure.cause,
        true,
      );
    }
    if (current?.ownerId === ownerId) return this.acquired(scoped, { kind: 'acquired', address, record: current, previous });
    const mayStillLand = failure.writeMayHaveLanded && (conditionEtag === undefined ? current === undefined : current?.etag === conditionEtag);
    if (mayStillLand) {
      this.remember(scoped, ownerId);
      throw new StoreUnavailableError(
        `table store did not answer the claim of ${JSON.stringify(scoped)} in time (${failure.message}); the read-back found nothing of ours, ` +
          'which proves nothing about a request still in flight: this claim may still land, and then the key stays in progress until ' +
          'its lease lapses (this process takes it over on its next claim); retry later',
        'claim',
        failure.cause,
        true,
      );
    }
    // Read back: nothing of ours landed, and the write's condition can no longer hold.
    throw new StoreUnavailableError(
      `table store unavailable during claim of ${JSON.stringify(scoped)} (${failure.message}); read back: this claim was not written ` +
        'and can no longer land, nothing was decided; retry later',
      'claim',
      failure.cause,
    );
  }

  /** True when `ownerId` is a claim of ours on `scoped` whose write may have landed unseen. */
  isUnresolved(scoped: string, ownerId: string): boolean {
    return this.unresolvedClaims.get(scoped) === ownerId;
  }

  /** Remembers the owner id of a claim of ours whose write may land unseen (bounded). */
  remember(scoped: string, ownerId: string): void {
    if (this.unresolvedClaims.size >= MAX_UNRESOLVED_CLAIMS) this.unresolvedClaims.delete(this.unresolvedClaims.keys().next().value as string);
    this.unresolvedClaims.set(scoped, ownerId);
  }
}
