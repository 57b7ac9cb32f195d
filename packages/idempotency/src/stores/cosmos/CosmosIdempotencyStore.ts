import type { Container, CosmosClient } from '@azure/cosmos';
import type { Clock } from '../../protocol/clock';
import { CompletedKeyCache } from '../../protocol/CompletedKeyCache';
import { requireConditionEtag } from '../../protocol/conditionEtag';
import { CosmosClaimWorkflow, type CosmosStateOf } from './cosmosAcquire';
import { markerDocument, markerToRecord, rowDocument, type CosmosMarkerFields, type CosmosMarkerState } from './cosmosDocuments';
import { CosmosMarkers } from './CosmosMarkers';
import { resolveCosmosStoreOptions, type CosmosIdempotencyStoreOptions } from './cosmosStoreOptions';
import { LeaseLostError, StoreUnavailableError } from '../../protocol/errors';
import type {
  Claim,
  ClaimOptions,
  CompleteOptions,
  ClaimOutcome,
  ClaimRequest,
  CommitOutcome,
  LocalEffect,
  ReopenableStore,
  ReopenOutcome,
} from '../../protocol/IdempotencyStore';
import { assertValidKey, scopedKeyString, type IdempotencyKey } from '../../protocol/keys';
import { assertDistinctKeys, validateEffects } from '../../protocol/localEffects';
import { leaseMsOption } from '../../protocol/options';
import { RecordStatus, type IdempotencyRecord } from '../../protocol/record';
import { cachedDecision, claimOf, isOwnWrite, isStillHeldBy, reopenBy, sameRowProperties } from '../../protocol/recordRules';
import { resultJsonWithin } from '../../protocol/resultJson';
import { scopedKeyHash } from '../../protocol/recordId';
import { MAX_REASON_LENGTH } from '../../protocol/storeOptions';
import { localRowsAfter } from '../../protocol/localRows';

/**
 * The idempotency store on Azure Cosmos DB for NoSQL, behind the same {@link IdempotencyStore} contract as
 * the Table store (the same decision rules, errors, record ids and truth about lost answers). Layout and
 * TTL: `cosmosDocuments.ts`; SDK calls: `CosmosMarkers.ts`; the claim workflow: `cosmosAcquire.ts`.
 *
 * Races are settled by the service: a claim is a create (409 for all but one), a takeover, completion,
 * release, renewal or an operator's {@link reopen} a replace with If-Match on the marker's `_etag` (412 for
 * all but one). Local effects commit with the marker in one transactional batch of the record's logical partition.
 *
 * No sweep: every document carries a `ttl` past the record's retention and lease end, so the service
 * deletes a record and its rows by itself (the container needs `defaultTtl: -1`).
 *
 * Round trips: a fresh claim 1 (create) and its completion 1; a duplicate 2 (failed create, read), 1 with
 * `readFirst`, 0 from the cache; {@link commit} 1 (a batch with its rows). A completion, release or renewal
 * that does not write a listed row again also reads it (1 point read per row) to carry its TTL forward.
 */
export class CosmosIdempotencyStore implements ReopenableStore {
  readonly leaseMs: number;
  readonly retentionMs: number;
  readonly maxResultBytes: number;
  readonly callTimeoutMs: number;
  private readonly clock: Clock;
  private readonly markers: CosmosMarkers;
  private readonly cache: CompletedKeyCache | undefined;
  private readonly claims: CosmosClaimWorkflow;

  /** @throws ConfigurationError naming the first option out of bounds. */
  constructor(
    readonly container: Container,
    options: CosmosIdempotencyStoreOptions,
  ) {
    const resolved = resolveCosmosStoreOptions(options);
    this.leaseMs = resolved.leaseMs;
    this.retentionMs = resolved.retentionMs;
    this.maxResultBytes = resolved.maxResultBytes;
    this.callTimeoutMs = resolved.callTimeoutMs;
    this.clock = resolved.clock;
    this.cache = resolved.cacheSize > 0 ? new CompletedKeyCache(resolved.cacheSize, this.clock, resolved.cacheable) : undefined;
    this.markers = new CosmosMarkers(container, this.callTimeoutMs, options.onRequestCharge);
    this.claims = new CosmosClaimWorkflow(this.markers, this.clock, this.cache, (...args) => this.fields(...args));
  }

  /**
   * Creates the database and the container when absent (partition key `/recordId`, `defaultTtl: -1`) and
   * returns it: for local runs and tests, once at start; in Azure the Bicep templates create them.
   * @throws StoreUnavailableError, StoreRequestError
   */
  static ensureContainer(client: CosmosClient, databaseName: string, containerName: string, callTimeoutMs = 30_000): Promise<Container> {
    return CosmosMarkers.ensureContainer(client, databaseName, containerName, callTimeoutMs);
  }

  /** The record id (and partition key value) of `key`: SHA-256 hex of the scoped key, as the Table store's RowKey. @throws InvalidKeyError */
  recordIdOf(key: IdempotencyKey): string {
    return scopedKeyHash(key);
  }

  async claim(key: IdempotencyKey, digest: string, options: ClaimOptions = {}): Promise<ClaimOutcome> {
    assertValidKey(key);
    const leaseMs = options?.leaseMs === undefined ? this.leaseMs : leaseMsOption(options.leaseMs);
    const effects = validateEffects(options?.effects);
    const cached = this.fromCache(key, digest);
    if (cached) return cached;
    const outcome = await this.acquire(key, digest, effects, options, (now, ownerId, attempt) => ({
      status: RecordStatus.InProgress,
      ownerId,
      attempt,
      leaseExpiresAtMs: now + leaseMs,
      resultJson: undefined,
    }));
    if (outcome.kind !== 'acquired') return outcome;
    const { record, previous } = outcome;
    const claim = claimOf(key, digest, record);
    return previous ? { kind: 'reclaimed', claim, previousStatus: previous.status, previousAttempt: previous.attempt } : { kind: 'claimed', claim };
  }

  /**
   * Claims each key as {@link claim} would, in order. Every key is its own logical partition, so there is no
   * transaction across keys: one create per key, sent concurrently. When one key fails, the claims made are
   * released and the first error is thrown. @throws ConfigurationError, InvalidKeyError, store errors
   */
  async claimMany(requests: readonly ClaimRequest[], options: Pick<ClaimOptions, 'leaseMs'> = {}): Promise<ClaimOutcome[]> {
    const leaseMs = options.leaseMs === undefined ? this.leaseMs : leaseMsOption(options.leaseMs);
    assertDistinctKeys(requests);
    const settled = await Promise.allSettled(requests.map(({ key, digest }) => this.claim(key, digest, { leaseMs })));
    const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (!failed) return settled.map((result) => (result as PromiseFulfilledResult<ClaimOutcome>).value);
    // One key failed: give back the claims this call made, so the batch's retry takes them at once (not after a lease).
    const made = settled.flatMap((result) => (result.status === 'fulfilled' && 'claim' in result.value ? [result.value.claim] : []));
    await Promise.all(made.map((claim) => this.release(claim, 'claimMany failed on another key').catch(() => undefined)));
    throw failed.reason;
  }

  async commit(key: IdempotencyKey, digest: string, result: unknown, effects?: readonly LocalEffect[]): Promise<CommitOutcome> {
    assertValidKey(key);
    const resultJson = resultJsonWithin(result, this.maxResultBytes);
    const valid = validateEffects(effects);
    const cached = this.fromCache(key, digest);
    if (cached) return cached;
    const outcome = await this.acquire(key, digest, valid, {}, (_now, ownerId, attempt) => ({
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

  async complete(claim: Claim, result: unknown, effects?: readonly LocalEffect[], options: CompleteOptions = {}): Promise<IdempotencyRecord> {
    assertValidKey(claim.key);
    const resultJson = resultJsonWithin(result, this.maxResultBytes);
    const valid = validateEffects(effects);
    const record = await this.rewrite(
      claim,
      'complete',
      valid,
      {
        status: RecordStatus.Completed,
        leaseExpiresAtMs: 0,
        resultJson,
        localRows: localRowsAfter(claim.localRows, valid),
      },
      options.exact === true,
    );
    this.cache?.put(scopedKeyString(claim.key), record);
    return record;
  }

  async release(claim: Claim, reason: string): Promise<void> {
    assertValidKey(claim.key);
    await this.rewrite(claim, 'release', [], { status: RecordStatus.Released, leaseExpiresAtMs: 0, lastError: String(reason).slice(0, MAX_REASON_LENGTH) });
  }

  async renewLease(claim: Claim, leaseMs: number = this.leaseMs): Promise<Claim> {
    assertValidKey(claim.key);
    const leaseExpiresAtMs = this.clock.nowMs() + leaseMsOption(leaseMs);
    const record = await this.rewrite(claim, 'renewLease', [], { status: RecordStatus.InProgress, leaseExpiresAtMs });
    return { ...claim, leaseExpiresAtMs: record.leaseExpiresAtMs, etag: record.etag };
  }

  /**
   * Reopens a completed record for a new claim (see {@link ReopenableStore.reopen}): the rewrite a release makes,
   * on the record's own claim, so a record whose ETag moved since it was read is `changed`. A write whose answer
   * was lost and that landed is recognised as this one (same owner, attempt, status, result).
   */
  async reopen(record: IdempotencyRecord, reason: string): Promise<ReopenOutcome> {
    return reopenBy(
      record,
      reason,
      MAX_REASON_LENGTH,
      (claim, change) => this.rewrite(claim, 'reopen', [], change),
      (scopedKey) => this.cache?.forget(scopedKey),
    );
  }

  async readLocalRow(key: IdempotencyKey, name: string): Promise<Readonly<Record<string, unknown>> | undefined> {
    assertValidKey(key);
    const rows = await this.markers.readRows(this.recordIdOf(key), [name], 'readLocalRow');
    return rows.get(name);
  }

  async get(key: IdempotencyKey): Promise<IdempotencyRecord | undefined> {
    return this.markers.read(this.recordIdOf(key));
  }

  private fromCache(key: IdempotencyKey, digest: string): Extract<ClaimOutcome, { kind: 'duplicate' | 'keyReused' }> | undefined {
    const record = this.cache?.get(scopedKeyString(key));
    if (!record) return undefined;
    return cachedDecision(record, digest) === 'duplicate' ? { kind: 'duplicate', record, cached: true } : { kind: 'keyReused', record, digest, cached: true };
  }

  private acquire(key: IdempotencyKey, digest: string, effects: readonly LocalEffect[], options: ClaimOptions, state: CosmosStateOf) {
    const { readFirst, keepLapsedInProgress } = options;
    return this.claims.acquire({ key, recordId: this.recordIdOf(key), digest, effects, state, readFirst: readFirst === true, keepLapsedInProgress });
  }

  /**
   * Replace of a claim's marker with If-Match, with the rows `effects` writes and the listed rows it does not
   * write again (read first, written back with the marker's new TTL, so a record's rows never expire before
   * it). When the condition fails, the marker is read, as in the Table store: what this write meant to leave
   * -> done; still held by the claim (its own renewals moved the ETag) -> written again on the new ETag;
   * anything else -> `LeaseLostError`. A renewal never shortens a lease. A write whose answer was lost is
   * decided the same way once the marker's ETag has moved; while it has not, the write may still land and
   * the `StoreUnavailableError` says so. `exact`: a record still held but moved on (a renewal since `claim.etag`) is
   * `LeaseLostError` too. A claim without an ETag is refused before anything is read or written (`requireConditionEtag`).
   */
  private async rewrite(
    claim: Claim,
    operation: string,
    effects: readonly LocalEffect[],
    change: Partial<CosmosMarkerState>,
    exact = false,
  ): Promise<IdempotencyRecord> {
    requireConditionEtag(claim.etag, operation, 'cosmos store');
    const state: CosmosMarkerState = {
      status: RecordStatus.InProgress,
      ownerId: claim.ownerId,
      attempt: claim.attempt,
      leaseExpiresAtMs: claim.leaseExpiresAtMs,
      resultJson: undefined,
      localRows: claim.localRows,
      ...change,
    };
    const intended = { ...state, leaseExpiresAtMs: Math.trunc(state.leaseExpiresAtMs) };
    const recordId = this.recordIdOf(claim.key);
    const marker = markerDocument(this.fields(claim.key, recordId, claim.digest, claim.createdAtMs, this.clock.nowMs()), state);
    const carried = state.localRows.filter((name) => !effects.some((effect) => effect.name === name));
    const kept = await this.markers.readRows(recordId, carried, operation);
    const rows = [...effects, ...[...kept].map(([name, properties]) => ({ name, properties }))].map((effect) => rowDocument(marker, effect));
    let etag = claim.etag;
    for (;;) {
      let written;
      try {
        written = await this.markers.write(marker, rows, [], 'replace', etag, operation);
      } catch (error) {
        // No answer (the SDK does not retry writes after a lost connection): learn from the record whether it landed.
        if (!(error instanceof StoreUnavailableError) || !error.writeMayHaveLanded) throw error;
        const now = await this.markers.read(recordId, operation).catch(() => 'unreadable' as const);
        // Unreadable, or still at the ETag it was conditioned on: the write may still land; say so.
        if (now === 'unreadable' || now?.etag === etag) throw error;
        written = { conflict: 'conditionFailed' as const };
      }
      if ('etag' in written) return markerToRecord(marker as unknown as Record<string, unknown>, written.etag);
      // The condition failed (or the answer was lost and the ETag moved): as in the Table store, read and decide.
      const now = await this.markers.read(recordId, operation);
      if (now && isOwnWrite(now, intended) && (await this.holdsRows(recordId, effects, operation))) return now;
      if (!now || exact || !isStillHeldBy(now, claim)) throw new LeaseLostError(scopedKeyString(claim.key), claim.attempt, operation);
      if (operation === 'renewLease' && now.leaseExpiresAtMs >= intended.leaseExpiresAtMs) return now;
      etag = now.etag;
    }
  }

  /** True when the local rows hold exactly what `effects` write (null values left out). */
  private async holdsRows(recordId: string, effects: readonly LocalEffect[], operation: string): Promise<boolean> {
    if (effects.length === 0) return true;
    const rows = await this.markers.readRows(
      recordId,
      effects.map((effect) => effect.name),
      operation,
    );
    return effects.every((effect) => sameRowProperties(rows.get(effect.name), effect.properties));
  }

  private fields(key: IdempotencyKey, recordId: string, digest: string, createdAtMs: number, nowMs: number): CosmosMarkerFields {
    return { key, recordId, digest, createdAtMs, nowMs, retentionMs: this.retentionMs };
  }
}
