import { randomUUID } from 'node:crypto';
import type { TableClient } from '@azure/data-tables';
import type { Clock } from './clock';
import { CompletedKeyCache } from './CompletedKeyCache';
import { LeaseLostError, StoreUnavailableError } from './errors';
import type { Claim, ClaimOptions, ClaimOutcome, CommitOutcome, IdempotencyStore, LocalEffect } from './IdempotencyStore';
import { assertValidKey, scopedKeyString, type IdempotencyKey } from './keys';
import { validateEffects } from './localEffects';
import { MarkerTable } from './MarkerTable';
import { leaseMsOption } from './options';
import { RecordStatus, type IdempotencyRecord } from './record';
import { cachedDecision, decideClaim, generationAfterTakeover, isOwnWrite } from './recordRules';
import { resultJsonWithin } from './resultJson';
import { tableAddress, type TableAddress } from './tableEncoding';
import { MAX_REASON_LENGTH, MAX_UNRESOLVED_CLAIMS, resolveTableStoreOptions, type TableIdempotencyStoreOptions } from './tableStoreOptions';
import { localRowsAfter, markerEntity, markerPatch, staleRowsOnTakeover, toRecord, type MarkerFields, type MarkerState } from './tableRows';

/**
 * The idempotency store on Azure Table Storage: the claim workflow. The decision rules are in
 * `recordRules.ts`, the row encoding in `tableRows.ts`, the SDK calls in `MarkerTable.ts`.
 * A claim's `recordId` is the marker's RowKey (see {@link addressOf}).
 *
 * Round trips: a fresh claim is 1 (insert); its completion 1; a duplicate 2 (failed insert, read),
 * or 0 from the cache; {@link commit} with local effects 1 (one entity-group transaction).
 *
 * Races are settled by the service: insert-if-absent for claims (409 for all but one), and
 * `If-Match: <etag>` for takeovers, completion and release (412 for all but one).
 */
export class TableIdempotencyStore implements IdempotencyStore {
  readonly partitionCount: number;
  readonly leaseMs: number;
  readonly retentionMs: number;
  readonly maxResultBytes: number;
  readonly callTimeoutMs: number;
  private readonly clock: Clock;
  private readonly table: MarkerTable;
  private readonly cache: CompletedKeyCache | undefined;
  /** Scoped key -> owner id of a claim of ours whose insert may have landed unseen (see {@link acquire}). */
  private readonly unresolvedClaims = new Map<string, string>();

  constructor(
    readonly client: TableClient,
    options: TableIdempotencyStoreOptions,
  ) {
    const resolved = resolveTableStoreOptions(options);
    this.partitionCount = resolved.partitionCount;
    this.leaseMs = resolved.leaseMs;
    this.retentionMs = resolved.retentionMs;
    this.maxResultBytes = resolved.maxResultBytes;
    this.callTimeoutMs = resolved.callTimeoutMs;
    this.clock = resolved.clock;
    this.cache = resolved.cacheSize > 0 ? new CompletedKeyCache(resolved.cacheSize, this.clock) : undefined;
    this.table = new MarkerTable(client, this.callTimeoutMs);
  }

  /** Creates the table when it does not exist (call once at start, not per message). */
  ensureTable(): Promise<void> {
    return this.table.ensureTable();
  }

  /** Where `key`'s record lives. @throws InvalidKeyError */
  addressOf(key: IdempotencyKey): TableAddress {
    return tableAddress(key, this.partitionCount);
  }

  /** Claims `key`; an existing record is decided by `decideClaim` (recordRules.ts). */
  async claim(key: IdempotencyKey, digest: string, options: ClaimOptions = {}): Promise<ClaimOutcome> {
    assertValidKey(key);
    const cached = this.fromCache(key, digest);
    if (cached) return cached;
    const leaseMs = options?.leaseMs === undefined ? this.leaseMs : leaseMsOption(options.leaseMs);
    const effects = validateEffects(options?.effects);
    const outcome = await this.acquire(key, digest, effects, (now, ownerId, attempt) => ({
      status: RecordStatus.InProgress,
      ownerId,
      attempt,
      leaseExpiresAtMs: now + leaseMs,
      resultJson: undefined,
    }));
    if (outcome.kind !== 'acquired') return outcome;
    const claim: Claim = {
      key,
      recordId: outcome.address.rowKey,
      digest,
      attempt: outcome.record.attempt,
      ownerId: outcome.record.ownerId,
      leaseExpiresAtMs: outcome.record.leaseExpiresAtMs,
      createdAtMs: outcome.record.createdAtMs,
      localRows: outcome.record.localRows,
      etag: outcome.record.etag,
    };
    return outcome.previous
      ? { kind: 'reclaimed', claim, previousStatus: outcome.previous.status, previousAttempt: outcome.previous.attempt }
      : { kind: 'claimed', claim };
  }

  async commit(key: IdempotencyKey, digest: string, result: unknown, effects?: readonly LocalEffect[]): Promise<CommitOutcome> {
    assertValidKey(key);
    const cached = this.fromCache(key, digest);
    if (cached) return cached;
    const resultJson = resultJsonWithin(result, this.maxResultBytes);
    const outcome = await this.acquire(key, digest, validateEffects(effects), (_now, ownerId, attempt) => ({
      status: RecordStatus.Completed,
      ownerId,
      attempt,
      leaseExpiresAtMs: 0,
      resultJson,
    }));
    if (outcome.kind !== 'acquired') return outcome;
    this.cache?.put(scopedKeyString(key), outcome.record);
    return { kind: 'committed', record: outcome.record, takeover: outcome.previous !== undefined };
  }

  async complete(claim: Claim, result: unknown, effects?: readonly LocalEffect[]): Promise<IdempotencyRecord> {
    assertValidKey(claim.key);
    const resultJson = resultJsonWithin(result, this.maxResultBytes);
    const valid = validateEffects(effects);
    const record = await this.rewrite(claim, 'complete', valid, {
      status: RecordStatus.Completed,
      leaseExpiresAtMs: 0,
      resultJson,
      localRows: localRowsAfter(claim.localRows, valid),
    });
    this.cache?.put(scopedKeyString(claim.key), record);
    return record;
  }

  async release(claim: Claim, reason: string): Promise<void> {
    assertValidKey(claim.key);
    await this.rewrite(claim, 'release', [], {
      status: RecordStatus.Released,
      leaseExpiresAtMs: 0,
      lastError: String(reason).slice(0, MAX_REASON_LENGTH),
    });
  }

  async renewLease(claim: Claim, leaseMs: number = this.leaseMs): Promise<Claim> {
    assertValidKey(claim.key);
    const leaseExpiresAtMs = this.clock.nowMs() + leaseMsOption(leaseMs);
    const record = await this.rewrite(claim, 'renewLease', [], { status: RecordStatus.InProgress, leaseExpiresAtMs });
    return { ...claim, leaseExpiresAtMs, etag: record.etag };
  }

  async get(key: IdempotencyKey): Promise<IdempotencyRecord | undefined> {
    return this.table.read(this.addressOf(key));
  }

  private fromCache(key: IdempotencyKey, digest: string): Extract<ClaimOutcome, { kind: 'duplicate' | 'keyReused' }> | undefined {
    const record = this.cache?.get(scopedKeyString(key));
    if (!record) return undefined;
    return cachedDecision(record, digest) === 'duplicate' ? { kind: 'duplicate', record, cached: true } : { kind: 'keyReused', record, digest, cached: true };
  }

  /**
   * Inserts the marker (with effects, in one transaction) or takes an existing record over.
   * Loops only when the record changed between our failed write and our read (bounded).
   *
   * Local rows: a fresh insert overwrites leftover rows of the same names (a previous lifetime's,
   * if any survived); a takeover writes the new attempt's rows and deletes the previous attempt's
   * rows it does not write again, in the same transaction, so a record's rows are always exactly
   * those its marker lists.
   *
   * An insert or takeover whose every answer was lost (the SDK's retries ended in a network
   * failure) is resolved by reading the record: ours -> the claim is ours; not ours -> nothing
   * of ours landed and the error is thrown as is. When even the read fails, the error says the
   * claim may have landed, and this store takes it over on its next claim of the key.
   */
  private async acquire(
    key: IdempotencyKey,
    digest: string,
    effects: readonly LocalEffect[],
    state: (nowMs: number, ownerId: string, attempt: number) => Omit<MarkerState, 'localRows'>,
  ): Promise<
    | { kind: 'acquired'; address: TableAddress; record: IdempotencyRecord; previous?: IdempotencyRecord }
    | Extract<ClaimOutcome, { kind: 'duplicate' | 'inProgress' | 'keyReused' }>
  > {
    const address = this.addressOf(key);
    const scoped = scopedKeyString(key);
    const localRows = effects.map((effect) => effect.name);
    // One owner id for the whole call: a write of ours whose answer was lost is recognised by it.
    const ownerId = randomUUID();
    let tookOverFrom: IdempotencyRecord | undefined;
    for (let round = 0; round < 5; round++) {
      const now = this.clock.nowMs();
      const fresh = markerEntity(this.fields(key, address, digest, now, now), { ...state(now, ownerId, 1), localRows });
      try {
        const written = await this.table.write(fresh, effects, [], 'create', undefined, 'claim');
        if ('etag' in written) return this.acquired(scoped, { kind: 'acquired', address, record: toRecord({ ...fresh, etag: written.etag }) });
      } catch (error) {
        if (error instanceof StoreUnavailableError) return this.resolveUnknownWrite(scoped, address, ownerId, tookOverFrom, error);
        throw error;
      }
      const existing = await this.table.read(address);
      if (!existing) continue; // deleted between our insert and our read: insert again
      if (existing.ownerId === ownerId) {
        // Our insert landed but its answer was lost (the SDK retried it): the claim is ours.
        return this.acquired(scoped, { kind: 'acquired', address, record: existing, previous: tookOverFrom });
      }
      const nowMs = this.clock.nowMs();
      let decision = decideClaim(existing, digest, nowMs, scoped);
      if (decision === 'inProgress' && this.unresolvedClaims.get(scoped) === existing.ownerId) {
        // A claim of ours whose outcome we could not learn: nobody works on it, take it over now.
        decision = 'takeover';
      }
      if (decision === 'duplicate') {
        this.cache?.put(scoped, existing);
        return { kind: 'duplicate', record: existing, cached: false };
      }
      if (decision === 'keyReused') return { kind: 'keyReused', record: existing, digest, cached: false };
      if (decision === 'inProgress') return { kind: 'inProgress', record: existing };
      tookOverFrom = existing;
      const staleRows = staleRowsOnTakeover(existing.localRows, localRows, scoped);
      const takeoverNow = this.clock.nowMs();
      // The takeover of an expired record starts a new lifetime (generation); any other keeps it.
      const createdAtMs = generationAfterTakeover(decision, existing, takeoverNow);
      const taken = markerEntity(this.fields(key, address, digest, createdAtMs, takeoverNow), {
        ...state(takeoverNow, ownerId, existing.attempt + 1),
        localRows,
      });
      try {
        const written = await this.table.write(taken, effects, staleRows, 'replace', existing.etag, 'takeover');
        if ('etag' in written)
          return this.acquired(scoped, { kind: 'acquired', address, record: toRecord({ ...taken, etag: written.etag }), previous: existing });
        // Another claimant took it over first (412) or it was deleted (404): look again.
      } catch (error) {
        if (error instanceof StoreUnavailableError) return this.resolveUnknownWrite(scoped, address, ownerId, existing, error);
        throw error;
      }
    }
    throw new StoreUnavailableError(`claim of ${JSON.stringify(scoped)} kept racing with other writers; retry later`, 'claim');
  }

  private acquired<T>(scoped: string, outcome: T): T {
    this.unresolvedClaims.delete(scoped);
    return outcome;
  }

  /** After a claim write failed without an answer: learn whether it landed (see {@link acquire}). */
  private async resolveUnknownWrite(
    scoped: string,
    address: TableAddress,
    ownerId: string,
    previous: IdempotencyRecord | undefined,
    failure: StoreUnavailableError,
  ): Promise<{ kind: 'acquired'; address: TableAddress; record: IdempotencyRecord; previous?: IdempotencyRecord }> {
    let current: IdempotencyRecord | undefined;
    try {
      current = await this.table.read(address);
    } catch {
      if (this.unresolvedClaims.size >= MAX_UNRESOLVED_CLAIMS) this.unresolvedClaims.delete(this.unresolvedClaims.keys().next().value as string);
      this.unresolvedClaims.set(scoped, ownerId);
      throw new StoreUnavailableError(
        `table store unavailable during claim of ${JSON.stringify(scoped)}: no answer, and this claim may have been written; ` +
          'if so the key stays in progress until its lease lapses (this process takes it over on its next claim); retry later',
        'claim',
        failure,
        true,
      );
    }
    if (current?.ownerId === ownerId) return this.acquired(scoped, { kind: 'acquired', address, record: current, previous });
    // Read back: nothing of ours landed, whatever the failed write's error supposed.
    throw new StoreUnavailableError(
      `table store unavailable during claim of ${JSON.stringify(scoped)} (${failure.message}); read back: this claim was not written, nothing was decided; retry later`,
      'claim',
      failure,
    );
  }

  /** Conditional rewrite of a claim's record; a lost condition means the lease was lost. */
  private async rewrite(claim: Claim, operation: string, effects: readonly LocalEffect[], change: Partial<MarkerState>): Promise<IdempotencyRecord> {
    const state: MarkerState = {
      status: RecordStatus.InProgress,
      ownerId: claim.ownerId,
      attempt: claim.attempt,
      leaseExpiresAtMs: claim.leaseExpiresAtMs,
      resultJson: undefined,
      localRows: claim.localRows,
      ...change,
    };
    const address = this.addressOf(claim.key);
    const current = markerEntity(this.fields(claim.key, address, claim.digest, claim.createdAtMs, this.clock.nowMs()), state);
    // Merge only what changes (fewer bytes to send and store than a full replace); the row was
    // written whole by this claim, so nothing stale survives the merge.
    const written = await this.table.write(markerPatch(current), effects, [], 'merge', claim.etag, operation);
    if ('etag' in written) return toRecord({ ...current, etag: written.etag });
    // The condition failed: either another claimant took over, or this very write landed and its
    // answer was lost (the SDK retried it with the old ETag). Only our own claim carries our owner id.
    const now = await this.table.read(address);
    if (now && isOwnWrite(now, { ...state, leaseExpiresAtMs: Math.trunc(state.leaseExpiresAtMs) })) return now;
    throw new LeaseLostError(scopedKeyString(claim.key), claim.attempt, operation);
  }

  /** What a marker of `key` written at `nowMs` carries besides its state. */
  private fields(key: IdempotencyKey, address: TableAddress, digest: string, createdAtMs: number, nowMs: number): MarkerFields {
    return { key, address, digest, createdAtMs, nowMs, retentionMs: this.retentionMs };
  }
}
