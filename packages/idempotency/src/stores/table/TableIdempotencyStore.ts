import type { TableClient } from '@azure/data-tables';
import type { Clock } from '../../protocol/clock';
import { CompletedKeyCache } from '../../protocol/CompletedKeyCache';
import { LeaseLostError } from '../../protocol/errors';
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
import { assertDistinctKeys } from '../../protocol/localEffects';
import { claimMany } from './tableClaimMany';
import { assertValidKey, scopedKeyString, type IdempotencyKey } from '../../protocol/keys';
import { validateEffects } from '../../protocol/localEffects';
import { MarkerTable } from './MarkerTable';
import { skipIdleTracing } from './idleTracing';
import { skipIdlePolicies } from './idlePolicies';
import { leaseMsOption } from '../../protocol/options';
import { RecordStatus, type IdempotencyRecord } from '../../protocol/record';
import { cachedDecision, isOwnWrite, isStillHeldBy, reopenBy, sameRowProperties } from '../../protocol/recordRules';
import { resultJsonWithin } from '../../protocol/resultJson';
import { tableAddress, type TableAddress } from './partitions';
import { MAX_REASON_LENGTH } from '../../protocol/storeOptions';
import { resolveTableStoreOptions, type TableIdempotencyStoreOptions } from './tableStoreOptions';
import { TableClaimWorkflow, type StateOf } from './tableAcquire';
import { localRowsAfter } from '../../protocol/localRows';
import { markerPatchOf, writtenRecord, type MarkerFields, type MarkerState } from './tableRows';

/**
 * The idempotency store on Azure Table Storage: the claim workflow. The decision rules are in
 * `recordRules.ts`, the row encoding in `tableRows.ts`, the SDK calls in `MarkerTable.ts`.
 * A claim's `recordId` is the marker's RowKey (see {@link addressOf}).
 *
 * Round trips: a fresh claim is 1 (insert); its completion 1; a duplicate 2 (failed insert, read),
 * or 0 from the cache; {@link commit} with local effects 1 (one entity-group transaction).
 *
 * Races are settled by the service: insert-if-absent for claims (409 for all but one), and
 * `If-Match: <etag>` for takeovers, completion and release (412 for all but one), and for an operator's
 * {@link reopen} of a completed record.
 */
export class TableIdempotencyStore implements ReopenableStore {
  readonly partitionCount: number;
  readonly leaseMs: number;
  readonly retentionMs: number;
  readonly maxResultBytes: number;
  readonly callTimeoutMs: number;
  private readonly clock: Clock;
  private readonly table: MarkerTable;
  private readonly cache: CompletedKeyCache | undefined;
  private readonly claims: TableClaimWorkflow;

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
    this.cache = resolved.cacheSize > 0 ? new CompletedKeyCache(resolved.cacheSize, this.clock, resolved.cacheable) : undefined;
    // No span per request while no tracer is registered (idleTracing.ts): the store's requests are most of its cost.
    skipIdleTracing(client);
    // Nor the SDK's policies that would only pass the request on (idlePolicies.ts: logging off, a string body, ...).
    skipIdlePolicies(client);
    this.table = new MarkerTable(client, this.callTimeoutMs);
    this.claims = new TableClaimWorkflow(this.table, this.clock, this.cache, (...args) => this.fields(...args));
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
    // Every input is checked before the cache answers: the outcome never depends on the cache's state.
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

  /**
   * Claims many keys in one transaction per partition when they are fresh (see `tableClaimMany.ts`).
   * @throws ConfigurationError for a key given twice or a bad lease; InvalidKeyError; store errors.
   */
  async claimMany(requests: readonly ClaimRequest[], options: Pick<ClaimOptions, 'leaseMs'> = {}): Promise<ClaimOutcome[]> {
    const leaseMs = options.leaseMs === undefined ? this.leaseMs : leaseMsOption(options.leaseMs);
    assertDistinctKeys(requests);
    return claimMany(
      {
        table: this.table,
        clock: this.clock,
        cache: this.cache,
        fields: (...args) => this.fields(...args),
        addressOf: (key) => this.addressOf(key),
        claimOne: (key, digest) => this.claim(key, digest, { leaseMs }),
        isUnresolved: (scoped, ownerId) => this.claims.isUnresolved(scoped, ownerId),
        remember: (scoped, ownerId) => this.claims.remember(scoped, ownerId),
      },
      requests,
      leaseMs,
    );
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
    const rows = await this.table.readRows(this.addressOf(key), [name]);
    return rows.get(name);
  }

  async get(key: IdempotencyKey): Promise<IdempotencyRecord | undefined> {
    return this.table.read(this.addressOf(key));
  }

  private fromCache(key: IdempotencyKey, digest: string): Extract<ClaimOutcome, { kind: 'duplicate' | 'keyReused' }> | undefined {
    const record = this.cache?.get(scopedKeyString(key));
    if (!record) return undefined;
    return cachedDecision(record, digest) === 'duplicate' ? { kind: 'duplicate', record, cached: true } : { kind: 'keyReused', record, digest, cached: true };
  }

  /** Inserts the marker or takes an existing record over (see `tableAcquire.ts`). */
  private acquire(key: IdempotencyKey, digest: string, effects: readonly LocalEffect[], options: ClaimOptions, state: StateOf) {
    const { readFirst, keepLapsedInProgress } = options;
    return this.claims.acquire({ key, address: this.addressOf(key), digest, effects, state, readFirst: readFirst === true, keepLapsedInProgress });
  }

  /**
   * Conditional rewrite of a claim's record. When the condition fails, the record is read: what this
   * write meant to leave (marker and local rows) -> done (its first try landed, or the same claim wrote
   * it before); still held by the claim (only its own renewals moved the ETag) -> written again on the
   * new ETag, as often as they keep moving it (each failed round means another write of this same claim
   * landed; there is no round limit that would give up on the claim's own writes); anything else ->
   * `LeaseLostError` (a takeover, a removal, or the claim already completed or released otherwise).
   * A renewal never shortens a lease: a record still held with a later lease end is left as it is. `exact`: a record
   * still held but moved on (a renewal since `claim.etag`) is `LeaseLostError` too.
   */
  private async rewrite(
    claim: Claim,
    operation: string,
    effects: readonly LocalEffect[],
    change: Partial<MarkerState>,
    exact = false,
  ): Promise<IdempotencyRecord> {
    const state: MarkerState = {
      status: RecordStatus.InProgress,
      ownerId: claim.ownerId,
      attempt: claim.attempt,
      leaseExpiresAtMs: claim.leaseExpiresAtMs,
      resultJson: undefined,
      localRows: claim.localRows,
      ...change,
    };
    const intended = { ...state, leaseExpiresAtMs: Math.trunc(state.leaseExpiresAtMs) };
    const address = this.addressOf(claim.key);
    const fields = this.fields(claim.key, address, claim.digest, claim.createdAtMs, this.clock.nowMs());
    // Merge only what changes (fewer bytes to send and store than a full replace); the row was
    // written whole by this claim, so nothing stale survives the merge.
    const patch = markerPatchOf(fields, state);
    let etag = claim.etag;
    for (;;) {
      const written = await this.table.write(patch, effects, [], 'merge', etag, operation);
      if ('etag' in written) return writtenRecord(fields, state, written.etag);
      // The condition failed: another claimant took over, or this very write landed and its answer was
      // lost (the SDK retried it with the old ETag), or a write of this same claim moved the ETag.
      // Only our own claim carries our owner id and attempt.
      const now = await this.table.read(address);
      if (now && isOwnWrite(now, intended) && (await this.holdsRows(address, effects))) return now;
      if (!now || exact || !isStillHeldBy(now, claim)) throw new LeaseLostError(scopedKeyString(claim.key), claim.attempt, operation);
      if (operation === 'renewLease' && now.leaseExpiresAtMs >= intended.leaseExpiresAtMs) return now;
      etag = now.etag;
    }
  }

  /** True when the local rows hold exactly what `effects` write (null values left out). */
  private async holdsRows(address: TableAddress, effects: readonly LocalEffect[]): Promise<boolean> {
    if (effects.length === 0) return true;
    const rows = await this.table.readRows(
      address,
      effects.map((effect) => effect.name),
    );
    return effects.every((effect) => sameRowProperties(rows.get(effect.name), effect.properties));
  }

  /** What a marker of `key` written at `nowMs` carries besides its state. */
  private fields(key: IdempotencyKey, address: TableAddress, digest: string, createdAtMs: number, nowMs: number): MarkerFields {
    return { key, address, digest, createdAtMs, nowMs, retentionMs: this.retentionMs };
  }
}
