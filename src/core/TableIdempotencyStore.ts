import { randomUUID } from 'node:crypto';
import type { TableClient, TableEntity, TableEntityResult, TransactionAction } from '@azure/data-tables';
import { systemClock, type Clock } from './clock';
import { CompletedKeyCache } from './CompletedKeyCache';
import { DEFAULT_STORE_TIMEOUT_MS, withDeadline, type StoreCallKind } from './deadline';
import { ConfigurationError, IdempotencyError, LeaseLostError, ResultTooLargeError, StoreRequestError, StoreUnavailableError, UnknownRecordStatusError } from './errors';
import type { Claim, ClaimOptions, ClaimOutcome, CommitOutcome, IdempotencyStore, LocalEffect } from './IdempotencyStore';
import { assertValidKey, scopedKeyString, type IdempotencyKey } from './keys';
import { validateEffectProperties } from './localEffects';
import { integerOption, leaseMsOption, MAX_CACHE_SIZE, MAX_RETENTION_MS, MAX_STORE_TIMEOUT_MS, requireOptionsObject } from './options';
import { resultJson } from './resultJson';
import { hasValidLease, isExpired, isKnownStatus, RecordStatus, type IdempotencyRecord } from './record';
import { classifyStoreError, toDomainError } from './storeErrors';
import { DEFAULT_PARTITION_COUNT, tableAddress, validatePartitionCount, type TableAddress } from './tableEncoding';

/** Hard ceiling on a stored result: a Table string property holds 64 KiB of UTF-16. */
export const MAX_RESULT_BYTES_LIMIT = 32 * 1024;
const MAX_REASON_LENGTH = 1024;
const EFFECT_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** The marker properties a completion, release or lease renewal changes. */
const MUTABLE_PROPERTIES = ['status', 'leaseExpiresAtMs', 'retentionExpiresAtMs', 'updatedAtMs', 'resultJson', 'lastError', 'localRows'] as const;
/** Marker rows carry this `kind`; local-effect rows carry their own. */
export const MARKER_KIND = 'idempotency-marker';
/** Marker property listing its local rows' names, comma-separated (the sweep reads it). */
export const LOCAL_ROWS_PROPERTY = 'localRows';
/** Most local rows of one key: the marker and its rows fit one 100-action transaction. */
export const MAX_LOCAL_ROWS = 99;
/** Claims whose write outcome stayed unknown, remembered per store instance (bounded). */
const MAX_UNRESOLVED_CLAIMS = 1000;

export interface TableIdempotencyStoreOptions {
  /** Partitions the records spread over; fixed for a table's lifetime. Default 16. */
  readonly partitionCount?: number;
  /** Default lease of a claim. Default 5 minutes. */
  readonly leaseMs?: number;
  /** How long a record is kept after its last write. Required: derive it from the broker (see retention). */
  readonly retentionMs: number;
  /** Largest stored result, in UTF-8 bytes of its JSON. Default and ceiling 32 KiB. */
  readonly maxResultBytes?: number;
  /** Entries of the in-process cache of completed keys; 0 (default) turns it off. */
  readonly cacheSize?: number;
  /** Deadline of each store call (SDK retries included), then `StoreUnavailableError`. Default 5 s. */
  readonly callTimeoutMs?: number;
  readonly clock?: Clock;
}

/** A record's decision against a claimant's digest (see {@link TableIdempotencyStore.claim}). */
type Decision = 'expired' | 'takeover' | 'duplicate' | 'inProgress' | 'keyReused';

/**
 * The idempotency store on Azure Table Storage.
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
  private readonly cache: CompletedKeyCache | undefined;
  /** Scoped key -> owner id of a claim of ours whose insert may have landed unseen (see {@link acquire}). */
  private readonly unresolvedClaims = new Map<string, string>();

  constructor(
    readonly client: TableClient,
    options: TableIdempotencyStoreOptions,
  ) {
    requireOptionsObject(options, 'TableIdempotencyStore options');
    this.partitionCount = validatePartitionCount(options.partitionCount ?? DEFAULT_PARTITION_COUNT);
    this.leaseMs = leaseMsOption(options.leaseMs ?? 5 * 60_000);
    this.retentionMs = integerOption(options.retentionMs, 'retentionMs', 1, MAX_RETENTION_MS);
    this.maxResultBytes = integerOption(options.maxResultBytes ?? MAX_RESULT_BYTES_LIMIT, 'maxResultBytes', 1, Number.MAX_SAFE_INTEGER);
    if (this.maxResultBytes > MAX_RESULT_BYTES_LIMIT) {
      throw new ConfigurationError(`maxResultBytes ${this.maxResultBytes} is above the Table Storage limit of ${MAX_RESULT_BYTES_LIMIT}`);
    }
    this.callTimeoutMs = integerOption(options.callTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS, 'callTimeoutMs', 1, MAX_STORE_TIMEOUT_MS);
    this.clock = options.clock ?? systemClock;
    if (typeof this.clock?.nowMs !== 'function') throw new ConfigurationError('clock must have a nowMs() method');
    const cacheSize = integerOption(options.cacheSize ?? 0, 'cacheSize', 0, MAX_CACHE_SIZE);
    this.cache = cacheSize > 0 ? new CompletedKeyCache(cacheSize, this.clock) : undefined;
  }

  /** Creates the table when it does not exist (call once at start, not per message). */
  async ensureTable(): Promise<void> {
    try {
      await this.call('createTable', 'write', (abortSignal) => this.client.createTable({ abortSignal }));
    } catch (error) {
      throw toDomainError(error, 'createTable', 'write');
    }
  }

  /** Where `key`'s record lives. @throws InvalidKeyError */
  addressOf(key: IdempotencyKey): TableAddress {
    return tableAddress(key, this.partitionCount);
  }

  /**
   * Claims `key`. Decision on an existing record, in this order:
   * expired -> take over; other digest -> keyReused; completed -> duplicate;
   * valid lease -> inProgress; lapsed lease or released -> take over (attempt + 1).
   */
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
      address: outcome.address,
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
    if (cached) return cached as CommitOutcome;
    const resultJson = this.serializeResult(result);
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
    const resultJson = this.serializeResult(result);
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
    return this.read(this.addressOf(key));
  }

  // ---------------------------------------------------------------------------------------------

  private fromCache(key: IdempotencyKey, digest: string): Extract<ClaimOutcome, { kind: 'duplicate' | 'keyReused' }> | undefined {
    const record = this.cache?.get(scopedKeyString(key));
    if (!record) return undefined;
    return record.digest === digest
      ? { kind: 'duplicate', record, cached: true }
      : { kind: 'keyReused', record, digest, cached: true };
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
      const fresh = this.markerEntity(key, address, digest, now, now, { ...state(now, ownerId, 1), localRows });
      try {
        const etag = await this.write(fresh, effects, [], 'create', undefined, 'claim');
        return this.acquired(scoped, { kind: 'acquired', address, record: toRecord({ ...fresh, etag }) });
      } catch (error) {
        if (error instanceof StoreUnavailableError) return this.resolveUnknownWrite(scoped, address, ownerId, tookOverFrom, error);
        if (!(error instanceof Conflict)) throw error;
      }
      const existing = await this.read(address);
      if (!existing) continue; // deleted between our insert and our read: insert again
      if (existing.ownerId === ownerId) {
        // Our insert landed but its answer was lost (the SDK retried it): the claim is ours.
        return this.acquired(scoped, { kind: 'acquired', address, record: existing, previous: tookOverFrom });
      }
      const nowMs = this.clock.nowMs();
      let decision = decide(existing, digest, nowMs, scoped);
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
      const staleRows = existing.localRows.filter((name) => !localRows.includes(name));
      if (1 + localRows.length + staleRows.length > MAX_LOCAL_ROWS + 1) {
        throw new ConfigurationError(
          `a takeover of ${JSON.stringify(scoped)} must write ${localRows.length} local rows and delete ${staleRows.length} of the previous attempt: ` +
            `more than one transaction holds (a key has at most ${MAX_LOCAL_ROWS} local row names across its attempts)`,
        );
      }
      const takeoverNow = this.clock.nowMs();
      // The takeover of an expired record starts a new lifetime (generation); any other keeps it.
      const createdAtMs = decision === 'expired' ? takeoverNow : existing.createdAtMs;
      const taken = this.markerEntity(key, address, digest, createdAtMs, takeoverNow, { ...state(takeoverNow, ownerId, existing.attempt + 1), localRows });
      try {
        const etag = await this.write(taken, effects, staleRows, 'replace', existing.etag, 'takeover');
        return this.acquired(scoped, { kind: 'acquired', address, record: toRecord({ ...taken, etag }), previous: existing });
      } catch (error) {
        if (error instanceof StoreUnavailableError) return this.resolveUnknownWrite(scoped, address, ownerId, existing, error);
        if (!(error instanceof Conflict)) throw error;
        // Another claimant took it over first (412) or it was deleted (404): look again.
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
      current = await this.read(address);
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
    const now = this.clock.nowMs();
    const current = this.markerEntity(claim.key, claim.address, claim.digest, claim.createdAtMs, now, {
      status: RecordStatus.InProgress,
      ownerId: claim.ownerId,
      attempt: claim.attempt,
      leaseExpiresAtMs: claim.leaseExpiresAtMs,
      resultJson: undefined,
      localRows: claim.localRows,
      ...change,
    });
    // Merge only what changes (fewer bytes to send and store than a full replace); the row was
    // written whole by this claim, so nothing stale survives the merge.
    const patch: TableEntity = { partitionKey: current.partitionKey, rowKey: current.rowKey };
    for (const name of MUTABLE_PROPERTIES) if (current[name] !== undefined) patch[name] = current[name];
    try {
      const etag = await this.write(patch, effects, [], 'merge', claim.etag, operation);
      return toRecord({ ...current, etag });
    } catch (error) {
      if (!(error instanceof Conflict)) throw error;
    }
    // The condition failed: either another claimant took over, or this very write landed and its
    // answer was lost (the SDK retried it with the old ETag). Only our own claim carries our owner id.
    const current_ = await this.read(claim.address);
    if (
      current_ &&
      current_.ownerId === claim.ownerId &&
      current_.attempt === claim.attempt &&
      current_.status === current.status &&
      current_.leaseExpiresAtMs === toNumber(current.leaseExpiresAtMs) &&
      (current_.result === undefined ? undefined : JSON.stringify(current_.result)) === current.resultJson
    ) {
      return current_;
    }
    throw new LeaseLostError(scopedKeyString(claim.key), claim.attempt, operation);
  }

  /**
   * One write: the marker alone, or the marker, its effects (upserted) and the deletes of
   * `staleRows` (local rows no longer on record) in one transaction.
   * `mode`: create (insert-if-absent), replace or merge (both only if `etag` matches).
   * @returns the marker's new etag. @throws Conflict (409/412/404) or a domain error.
   */
  private async write(
    marker: TableEntity,
    effects: readonly LocalEffect[],
    staleRows: readonly string[],
    mode: 'create' | 'replace' | 'merge',
    etag: string | undefined,
    operation: string,
  ): Promise<string> {
    const updateMode = mode === 'merge' ? 'Merge' : 'Replace';
    try {
      if (effects.length === 0 && staleRows.length === 0) {
        const response = await this.call(operation, 'write', (abortSignal) =>
          mode === 'create' ? this.client.createEntity(marker, { abortSignal }) : this.client.updateEntity(marker, updateMode, { etag, abortSignal }),
        );
        return requireEtag(response.etag, operation);
      }
      const markerAction: TransactionAction = mode === 'create' ? ['create', marker] : ['update', marker, updateMode, { etag }];
      // Upsert even on create: the marker's insert-if-absent guards the transaction, and a row of
      // the same name left by an earlier lifetime of the key is taken over, not a 409 forever.
      const effectActions = effects.map((effect): TransactionAction => ['upsert', this.effectEntity(marker, effect), 'Replace']);
      const deleteActions = staleRows.map((name): TransactionAction => ['delete', { partitionKey: marker.partitionKey as string, rowKey: localRowKey(marker.rowKey as string, name) }]);
      const response = await this.call(operation, 'write', (abortSignal) => this.client.submitTransaction([markerAction, ...effectActions, ...deleteActions], { abortSignal }));
      // Sub-responses come in the order of the actions: the marker's is first.
      return requireEtag(response.subResponses[0]?.etag, operation);
    } catch (error) {
      if (error instanceof IdempotencyError) throw error;
      const conflict = classifyStoreError(error, operation, 'write');
      throw new Conflict(conflict);
    }
  }

  private async read(address: TableAddress): Promise<IdempotencyRecord | undefined> {
    try {
      const entity = await this.call('read', 'read', (abortSignal) => this.client.getEntity(address.partitionKey, address.rowKey, { abortSignal }));
      return toRecord(entity);
    } catch (error) {
      if (error instanceof IdempotencyError) throw error;
      if (classifyStoreError(error, 'read', 'read') === 'notFound') return undefined;
      throw new StoreRequestError('unexpected conflict answer to a read', 'read', undefined, error);
    }
  }

  /** Every SDK call goes through here: one deadline for all (see deadline.ts). */
  private call<T>(operation: string, kind: StoreCallKind, sdkCall: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    return withDeadline(this.callTimeoutMs, operation, kind, sdkCall);
  }

  private markerEntity(key: IdempotencyKey, address: TableAddress, digest: string, createdAtMs: number, nowMs: number, state: MarkerState): TableEntity {
    const entity: TableEntity = {
      partitionKey: address.partitionKey,
      rowKey: address.rowKey,
      kind: MARKER_KIND,
      consumer: key.consumer,
      idempotencyKey: key.key,
      digest,
      status: state.status,
      ownerId: state.ownerId,
      attempt: state.attempt,
      leaseExpiresAtMs: int64(state.leaseExpiresAtMs),
      retentionExpiresAtMs: int64(nowMs + this.retentionMs),
      createdAtMs: int64(createdAtMs),
      updatedAtMs: int64(nowMs),
    };
    if (state.resultJson !== undefined) entity.resultJson = state.resultJson;
    if (state.lastError !== undefined) entity.lastError = state.lastError;
    if (state.localRows.length > 0) entity[LOCAL_ROWS_PROPERTY] = state.localRows.join(',');
    return entity;
  }

  private effectEntity(marker: TableEntity, effect: LocalEffect): TableEntity {
    const properties = Object.fromEntries(Object.entries(effect.properties).filter(([, value]) => value !== null));
    return { ...properties, partitionKey: marker.partitionKey, rowKey: localRowKey(marker.rowKey as string, effect.name), kind: effect.name };
  }

  private serializeResult(result: unknown): string | undefined {
    const json = resultJson(result);
    if (json === undefined) return undefined;
    const size = Buffer.byteLength(json, 'utf8');
    if (size > this.maxResultBytes) throw new ResultTooLargeError(size, this.maxResultBytes);
    return json;
  }
}

interface MarkerState {
  status: RecordStatus;
  ownerId: string;
  attempt: number;
  leaseExpiresAtMs: number;
  resultJson: string | undefined;
  lastError?: string;
  /** Names of the local rows on record (listed on the marker). */
  localRows: readonly string[];
}

/** Internal signal for the three expected store answers. */
class Conflict extends Error {
  constructor(readonly conflict: 'exists' | 'conditionFailed' | 'notFound') {
    super(conflict);
  }
}

/** @throws UnknownRecordStatusError for a live record whose status this version does not know. */
function decide(existing: IdempotencyRecord, digest: string, nowMs: number, scopedKey: string): Decision {
  if (isExpired(existing, nowMs)) return 'expired';
  if (!isKnownStatus(existing.status)) throw new UnknownRecordStatusError(scopedKey, String(existing.status));
  if (existing.digest !== digest) return 'keyReused';
  if (existing.status === RecordStatus.Completed) return 'duplicate';
  if (hasValidLease(existing, nowMs)) return 'inProgress';
  return 'takeover';
}

function int64(value: number): { value: string; type: 'Int64' } {
  return { value: String(Math.trunc(value)), type: 'Int64' };
}

function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string') return Number(value);
  if (value && typeof value === 'object' && 'value' in value) return Number((value as { value: unknown }).value);
  return Number.NaN;
}

function toRecord(entity: TableEntityResult<Record<string, unknown>> | TableEntity): IdempotencyRecord {
  const resultJson = entity.resultJson as string | undefined;
  let result: unknown;
  try {
    result = resultJson === undefined ? undefined : JSON.parse(resultJson);
  } catch (cause) {
    throw new StoreRequestError('stored result is not valid JSON', 'read', undefined, cause);
  }
  const updatedAtMs = toNumber(entity.updatedAtMs);
  return {
    consumer: String(entity.consumer),
    key: String(entity.idempotencyKey),
    status: entity.status as RecordStatus,
    digest: String(entity.digest),
    result,
    attempt: toNumber(entity.attempt),
    ownerId: String(entity.ownerId),
    leaseExpiresAtMs: toNumber(entity.leaseExpiresAtMs),
    retentionExpiresAtMs: toNumber(entity.retentionExpiresAtMs),
    createdAtMs: toNumber(entity.createdAtMs ?? updatedAtMs),
    updatedAtMs,
    lastError: entity.lastError === undefined ? undefined : String(entity.lastError),
    localRows: parseLocalRows(entity[LOCAL_ROWS_PROPERTY]),
    etag: String(entity.etag),
  };
}

/** The RowKey of local row `name` of the marker `markerRowKey`. */
export function localRowKey(markerRowKey: string, name: string): string {
  return `${markerRowKey}~${name}`;
}

/** The names listed in a marker's {@link LOCAL_ROWS_PROPERTY} (absent: none). */
export function parseLocalRows(value: unknown): string[] {
  return typeof value === 'string' && value !== '' ? value.split(',') : [];
}

/** The local rows on record after a write of `effects` to a claim holding `current`. */
function localRowsAfter(current: readonly string[], effects: readonly LocalEffect[]): readonly string[] {
  const names = [...current, ...effects.map((effect) => effect.name).filter((name) => !current.includes(name))];
  if (names.length > MAX_LOCAL_ROWS) throw new ConfigurationError(`a key has at most ${MAX_LOCAL_ROWS} local rows, this write would give it ${names.length}`);
  return names;
}

function requireEtag(etag: string | undefined, operation: string): string {
  if (!etag) throw new StoreRequestError(`store returned no etag for ${operation}`, operation, undefined);
  return etag;
}

function validateEffects(effects: readonly LocalEffect[] | undefined): readonly LocalEffect[] {
  if (!effects) return [];
  if (effects.length > MAX_LOCAL_ROWS) throw new ConfigurationError(`at most ${MAX_LOCAL_ROWS} local effects fit in one transaction with the marker, got ${effects.length}`);
  const names = new Set<string>();
  for (const effect of effects) {
    if (!EFFECT_NAME.test(effect.name)) throw new ConfigurationError(`local effect name ${JSON.stringify(effect.name)} must match ${EFFECT_NAME}`);
    if (names.has(effect.name)) throw new ConfigurationError(`local effect name ${JSON.stringify(effect.name)} is used twice`);
    names.add(effect.name);
    validateEffectProperties(effect);
  }
  return effects;
}
