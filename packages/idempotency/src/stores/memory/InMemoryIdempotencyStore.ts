import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../../protocol/clock';
import { ConfigurationError, LeaseLostError } from '../../protocol/errors';
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
import { integerOption, leaseMsOption, MAX_RETENTION_MS, requireOptionsObject } from '../../protocol/options';
import { copyRecord, RecordStatus, type IdempotencyRecord } from '../../protocol/record';
import {
  claimOf,
  decideClaim,
  generationAfterTakeover,
  isExpired,
  isOwnWrite,
  isStillHeldBy,
  reopenBy,
  sameRowProperties,
  storedRowProperties,
  type IntendedWrite,
} from '../../protocol/recordRules';
import { resultJsonWithin } from '../../protocol/resultJson';
import { scopedKeyHash } from '../../protocol/recordId';
import { MAX_REASON_LENGTH, MAX_RESULT_BYTES_LIMIT } from '../../protocol/storeOptions';
import { localRowsAfter, staleRowsOnTakeover } from '../../protocol/localRows';

export interface InMemoryIdempotencyStoreOptions {
  /** Default lease of a claim. Default 5 minutes. */
  readonly leaseMs?: number;
  /** How long a record is kept after its last write. Default 30 days. */
  readonly retentionMs?: number;
  /** Largest stored result, in UTF-8 bytes of its JSON. Default and ceiling 32 KiB (as the Table store). */
  readonly maxResultBytes?: number;
  /** The source of time: inject a settable clock to move past leases and retention in a test. */
  readonly clock?: Clock;
}

interface Entry {
  record: IdempotencyRecord;
  rows: Map<string, Record<string, string | number | boolean>>;
}

/**
 * An {@link IdempotencyStore} in process memory, for unit tests of code that uses the store (your
 * handlers, `makeIdempotent`) without Azure or Azurite. It passes the same contract suite as
 * `TableIdempotencyStore` (`test/contract/`): the same outcomes, the same errors (`InvalidKeyError`,
 * `LeaseLostError`, `ResultTooLargeError`, `ConfigurationError`...), the same decision rules
 * (`recordRules.ts`), the same record ids; results come back through JSON, as from the table.
 * It is not shared between processes and forgets everything on exit: never use it in production.
 *
 * @example
 * const clock = { now: 0, nowMs() { return this.now; } };
 * const store = new InMemoryIdempotencyStore({ leaseMs: 1_000, clock });
 * const handler = makeIdempotent(myHandler, { store, consumer: 'orders' });
 */
export class InMemoryIdempotencyStore implements ReopenableStore {
  readonly leaseMs: number;
  readonly retentionMs: number;
  readonly maxResultBytes: number;
  private readonly clock: Clock;
  private readonly entries = new Map<string, Entry>();
  private version = 0;

  /** @throws ConfigurationError naming the first option out of bounds. */
  constructor(options: InMemoryIdempotencyStoreOptions = {}) {
    requireOptionsObject(options, 'InMemoryIdempotencyStore options');
    this.leaseMs = leaseMsOption(options.leaseMs ?? 5 * 60_000);
    this.retentionMs = integerOption(options.retentionMs ?? 30 * 86_400_000, 'retentionMs', 1, MAX_RETENTION_MS);
    this.maxResultBytes = integerOption(options.maxResultBytes ?? MAX_RESULT_BYTES_LIMIT, 'maxResultBytes', 1, MAX_RESULT_BYTES_LIMIT);
    const clock = options.clock ?? systemClock;
    if (typeof clock?.nowMs !== 'function') throw new ConfigurationError('clock must have a nowMs() method');
    this.clock = clock;
  }

  async claim(key: IdempotencyKey, digest: string, options: ClaimOptions = {}): Promise<ClaimOutcome> {
    assertValidKey(key);
    const leaseMs = options.leaseMs === undefined ? this.leaseMs : leaseMsOption(options.leaseMs);
    const effects = validateEffects(options.effects);
    const found = this.acquire(
      key,
      digest,
      effects,
      (now) => ({ status: RecordStatus.InProgress, leaseExpiresAtMs: now + leaseMs, result: undefined }),
      options.keepLapsedInProgress === true,
    );
    if (found.kind !== 'acquired') return found;
    const { record, previous } = found;
    const claim: Claim = { ...claimOf(key, digest, record), localRows: [...record.localRows] };
    return previous ? { kind: 'reclaimed', claim, previousStatus: previous.status, previousAttempt: previous.attempt } : { kind: 'claimed', claim };
  }

  /** Claims many keys (one by one here: memory has no round trips to save). */
  async claimMany(requests: readonly ClaimRequest[], options: Pick<ClaimOptions, 'leaseMs'> = {}): Promise<ClaimOutcome[]> {
    if (options.leaseMs !== undefined) leaseMsOption(options.leaseMs);
    assertDistinctKeys(requests);
    const outcomes: ClaimOutcome[] = [];
    for (const { key, digest } of requests) outcomes.push(await this.claim(key, digest, options));
    return outcomes;
  }

  async commit(key: IdempotencyKey, digest: string, result: unknown, effects?: readonly LocalEffect[]): Promise<CommitOutcome> {
    assertValidKey(key);
    const stored = parsed(resultJsonWithin(result, this.maxResultBytes));
    const found = this.acquire(key, digest, validateEffects(effects), () => ({ status: RecordStatus.Completed, leaseExpiresAtMs: 0, result: stored }));
    if (found.kind !== 'acquired') return found;
    return { kind: 'committed', record: copyRecord(found.record), takeover: found.previous !== undefined };
  }

  async complete(claim: Claim, result: unknown, effects?: readonly LocalEffect[], options: CompleteOptions = {}): Promise<IdempotencyRecord> {
    assertValidKey(claim.key);
    const resultJson = resultJsonWithin(result, this.maxResultBytes);
    const valid = validateEffects(effects);
    const localRows = localRowsAfter(claim.localRows, valid);
    const intended = { status: RecordStatus.Completed, leaseExpiresAtMs: 0, resultJson, localRows };
    const entry = this.held(claim, 'complete', intended, valid);
    if (entry === 'ownWrite') return this.copyOf(claim.key);
    // Exact: only the version the claim names (a renewal since moved it), as the Table store's If-Match without a retry.
    if (options.exact && entry.record.etag !== claim.etag) throw new LeaseLostError(scopedKeyString(claim.key), claim.attempt, 'complete');
    for (const effect of valid) entry.rows.set(effect.name, storedRowProperties(effect.properties));
    return copyRecord(this.write(entry, { status: RecordStatus.Completed, leaseExpiresAtMs: 0, result: parsed(resultJson), localRows }));
  }

  async release(claim: Claim, reason: string): Promise<void> {
    assertValidKey(claim.key);
    const intended = { status: RecordStatus.Released, leaseExpiresAtMs: 0, resultJson: undefined, localRows: claim.localRows };
    const entry = this.held(claim, 'release', intended, []);
    if (entry === 'ownWrite') return;
    this.write(entry, { status: RecordStatus.Released, leaseExpiresAtMs: 0, lastError: String(reason).slice(0, MAX_REASON_LENGTH) });
  }

  async renewLease(claim: Claim, leaseMs: number = this.leaseMs): Promise<Claim> {
    assertValidKey(claim.key);
    const leaseExpiresAtMs = this.clock.nowMs() + leaseMsOption(leaseMs);
    const intended = { status: RecordStatus.InProgress, leaseExpiresAtMs, resultJson: undefined, localRows: claim.localRows };
    const entry = this.held(claim, 'renewLease', intended, []);
    // As in the Table store: a renewal with a stale ETag never shortens a lease the same claim extended further.
    const keep = entry === 'ownWrite' || (entry.record.etag !== claim.etag && entry.record.leaseExpiresAtMs >= leaseExpiresAtMs);
    const record = keep ? this.entries.get(scopedKeyString(claim.key))!.record : this.write(entry, { leaseExpiresAtMs });
    return { ...claim, leaseExpiresAtMs: record.leaseExpiresAtMs, etag: record.etag };
  }

  async get(key: IdempotencyKey): Promise<IdempotencyRecord | undefined> {
    assertValidKey(key);
    const record = this.entries.get(scopedKeyString(key))?.record;
    return record && copyRecord(record);
  }

  /** The local rows on record for `key` (name -> properties): what a test of effects looks at. */
  localRowsOf(key: IdempotencyKey): ReadonlyMap<string, LocalEffect['properties']> {
    assertValidKey(key);
    return new Map([...(this.entries.get(scopedKeyString(key))?.rows ?? [])].map(([name, properties]) => [name, { ...properties }]));
  }

  /** Reopens a completed record for a new claim, by the same rules as the Table and Cosmos stores ({@link ReopenableStore.reopen}). */
  async reopen(record: IdempotencyRecord, reason: string): Promise<ReopenOutcome> {
    return reopenBy(
      record,
      reason,
      MAX_REASON_LENGTH,
      async (claim, change) => {
        const intended = { status: change.status, leaseExpiresAtMs: change.leaseExpiresAtMs, resultJson: change.resultJson, localRows: claim.localRows };
        const entry = this.held(claim, 'reopen', intended, []);
        if (entry === 'ownWrite') return this.copyOf(claim.key);
        const { resultJson, ...rest } = change;
        return copyRecord(this.write(entry, { ...rest, result: parsed(resultJson) }));
      },
      () => undefined,
    );
  }

  async readLocalRow(key: IdempotencyKey, name: string): Promise<Readonly<Record<string, unknown>> | undefined> {
    assertValidKey(key);
    const row = this.entries.get(scopedKeyString(key))?.rows.get(name);
    return row && { ...row };
  }

  /** Every record held (copies), in insertion order: what a test or a simulation looks over. */
  records(): IdempotencyRecord[] {
    return [...this.entries.values()].map((entry) => copyRecord(entry.record));
  }

  /**
   * What the Table sweep's hold pass does for a key whose message is held (dead-lettered): a record whose retention
   * ends within `holdMs` of now lives on to now + 2 x `holdMs` (so a claim never takes it for expired).
   * @returns true when the record was extended
   */
  hold(key: IdempotencyKey, holdMs: number): boolean {
    assertValidKey(key);
    const entry = this.entries.get(scopedKeyString(key));
    const now = this.clock.nowMs();
    if (!entry || entry.record.retentionExpiresAtMs > now + holdMs) return false;
    entry.record = { ...entry.record, retentionExpiresAtMs: now + 2 * holdMs, etag: this.nextEtag() };
    return true;
  }

  /**
   * Deletes the records past retention (and not under a valid lease), as the Table store's expiry sweep does; those
   * `keep` answers true for stay (the sweep's held records). @returns how many.
   */
  deleteExpired(keep: (record: IdempotencyRecord) => boolean = () => false): number {
    const now = this.clock.nowMs();
    let deleted = 0;
    for (const [scoped, entry] of this.entries) {
      if (isExpired(entry.record, now) && !keep(copyRecord(entry.record))) {
        this.entries.delete(scoped);
        deleted++;
      }
    }
    return deleted;
  }

  private acquire(
    key: IdempotencyKey,
    digest: string,
    effects: readonly LocalEffect[],
    state: (nowMs: number) => Pick<IdempotencyRecord, 'status' | 'leaseExpiresAtMs' | 'result'>,
    keepLapsedInProgress = false,
  ): { kind: 'acquired'; record: IdempotencyRecord; previous?: IdempotencyRecord } | Exclude<CommitOutcome, { kind: 'committed' }> {
    const scoped = scopedKeyString(key);
    const now = this.clock.nowMs();
    const names = effects.map((effect) => effect.name);
    const existing = this.entries.get(scoped)?.record;
    let attempt = 1;
    let createdAtMs = now;
    if (existing) {
      const decision = decideClaim(existing, digest, now, scoped);
      // Answers are copies: a caller that changes a replayed result changes nothing stored.
      if (decision === 'duplicate') return { kind: 'duplicate', record: copyRecord(existing), cached: false };
      if (decision === 'keyReused') return { kind: 'keyReused', record: copyRecord(existing), digest, cached: false };
      if (decision === 'inProgress' || (decision === 'takeover' && keepLapsedInProgress && existing.status === RecordStatus.InProgress))
        return { kind: 'inProgress', record: copyRecord(existing) };
      staleRowsOnTakeover(existing.localRows, names, scoped); // the same bound as one Table transaction
      attempt = existing.attempt + 1;
      createdAtMs = generationAfterTakeover(decision, existing, now);
    }
    const record: IdempotencyRecord = {
      recordId: scopedKeyHash(key),
      consumer: key.consumer,
      key: key.key,
      digest,
      ownerId: randomUUID(),
      attempt,
      createdAtMs,
      updatedAtMs: now,
      retentionExpiresAtMs: now + this.retentionMs,
      localRows: names,
      etag: this.nextEtag(),
      ...state(now),
    };
    this.entries.set(scoped, { record, rows: new Map(effects.map((effect) => [effect.name, storedRowProperties(effect.properties)])) });
    return { kind: 'acquired', record, previous: existing };
  }

  /**
   * The entry `claim` may write, by the Table store's rules: the claim's own version -> write; another
   * version that already is what this write means to leave (marker and rows) -> `'ownWrite'` (nothing to
   * write: the same claim wrote it before); another version still held by the claim (its renewals moved
   * it) -> write; anything else -> `LeaseLostError`.
   */
  private held(claim: Claim, operation: string, intended: Omit<IntendedWrite, 'ownerId' | 'attempt'>, effects: readonly LocalEffect[]): Entry | 'ownWrite' {
    const entry = this.entries.get(scopedKeyString(claim.key));
    if (entry && entry.record.etag === claim.etag && entry.record.ownerId === claim.ownerId) return entry;
    if (entry && isOwnWrite(copyRecord(entry.record), { ...intended, ownerId: claim.ownerId, attempt: claim.attempt })) {
      if (effects.every((effect) => sameRowProperties(entry.rows.get(effect.name), effect.properties))) return 'ownWrite';
    }
    if (entry && isStillHeldBy(entry.record, claim)) return entry;
    throw new LeaseLostError(scopedKeyString(claim.key), claim.attempt, operation);
  }

  private copyOf(key: IdempotencyKey): IdempotencyRecord {
    return copyRecord(this.entries.get(scopedKeyString(key))!.record);
  }

  private write(entry: Entry, change: Partial<IdempotencyRecord>): IdempotencyRecord {
    const now = this.clock.nowMs();
    entry.record = { ...entry.record, ...change, updatedAtMs: now, retentionExpiresAtMs: now + this.retentionMs, etag: this.nextEtag() };
    return entry.record;
  }

  private nextEtag(): string {
    return `W/"mem-${++this.version}"`;
  }
}

/** A result as the table gives it back: through JSON (undefined stays "no result"). */
function parsed(json: string | undefined): unknown {
  return json === undefined ? undefined : (JSON.parse(json) as unknown);
}
