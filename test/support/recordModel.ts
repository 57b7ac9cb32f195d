/**
 * A small reference model of what the idempotency store must do to one table of records: the
 * decision on every claim, what each write leaves behind (status, attempt, lease, retention,
 * generation, result, local rows) and what a sweep removes. Pure, no I/O: the model-based test
 * (test/integration/recordModel.test.ts) runs the same steps against Azurite and this model and
 * compares them after every step.
 */

export const MODEL_LEASE_MS = 60_000;
export const MODEL_RETENTION_MS = 3_600_000;

export interface ModelRecord {
  status: string;
  digest: string;
  attempt: number;
  leaseExpiresAtMs: number;
  retentionExpiresAtMs: number;
  createdAtMs: number;
  result: unknown;
  /** Local row name -> its `v` property. */
  rows: Map<string, number>;
  /** Changes on every write (the model's ETag); unique across the whole run. */
  version: number;
  /** The claim holding (or last holding) the record: the version its acquire wrote (the model's owner id + attempt). */
  owner: number;
}

/** What a claim (or commit) of a digest must find. */
export type ModelDecision = 'absent' | 'expired' | 'unknownStatus' | 'keyReused' | 'duplicate' | 'inProgress' | 'takeover';

const KNOWN = new Set(['IN_PROGRESS', 'COMPLETED', 'RELEASED']);

export function hasValidLease(record: ModelRecord, nowMs: number): boolean {
  return record.status === 'IN_PROGRESS' && record.leaseExpiresAtMs > nowMs;
}

export function isExpired(record: ModelRecord, nowMs: number): boolean {
  return record.retentionExpiresAtMs <= nowMs && !hasValidLease(record, nowMs);
}

export class RecordModel {
  readonly records = new Map<string, ModelRecord>();
  private nextVersion = 1;

  decide(key: string, digest: string, nowMs: number): ModelDecision {
    const record = this.records.get(key);
    if (!record) return 'absent';
    if (isExpired(record, nowMs)) return 'expired';
    if (!KNOWN.has(record.status)) return 'unknownStatus';
    if (record.digest !== digest) return 'keyReused';
    if (record.status === 'COMPLETED') return 'duplicate';
    if (hasValidLease(record, nowMs)) return 'inProgress';
    return 'takeover';
  }

  /**
   * A claim (`completed` false) or commit (`completed` true) that wins: the record after it.
   * A takeover replaces the previous attempt's rows; an expired record starts a new generation.
   */
  acquire(key: string, digest: string, nowMs: number, rows: ReadonlyMap<string, number>, completed: { result: unknown } | undefined): ModelRecord {
    const previous = this.records.get(key);
    const expiredOrAbsent = !previous || isExpired(previous, nowMs);
    const record: ModelRecord = {
      status: completed ? 'COMPLETED' : 'IN_PROGRESS',
      digest,
      attempt: previous ? previous.attempt + 1 : 1,
      leaseExpiresAtMs: completed ? 0 : nowMs + MODEL_LEASE_MS,
      retentionExpiresAtMs: nowMs + MODEL_RETENTION_MS,
      createdAtMs: expiredOrAbsent ? nowMs : previous.createdAtMs,
      result: completed?.result,
      rows: new Map(rows),
      version: this.nextVersion,
      owner: this.nextVersion++,
    };
    this.records.set(key, record);
    return record;
  }

  /** True when a claim that wrote `version` still owns the record. */
  owns(key: string, version: number): boolean {
    return this.records.get(key)?.version === version;
  }

  /**
   * True when the record already is what the claim acquired as `owner` would write (status, lease,
   * result, and local rows: the claim's own plus `rows`, with exactly their values): the store takes a
   * repeated write by the same owner for its own write whose answer was lost, and reports success
   * without writing. Other rows or values are not its write (LeaseLostError).
   */
  alreadyWritten(
    key: string,
    owner: number,
    status: string,
    leaseExpiresAtMs: number,
    result: unknown,
    claimRows: readonly string[] = [],
    rows: ReadonlyMap<string, number> = new Map(),
  ): boolean {
    const record = this.records.get(key);
    const names = new Set([...claimRows, ...rows.keys()]);
    return (
      record !== undefined &&
      record.owner === owner &&
      record.status === status &&
      record.leaseExpiresAtMs === leaseExpiresAtMs &&
      JSON.stringify(record.result) === JSON.stringify(result) &&
      record.rows.size === names.size &&
      [...names].every((name) => record.rows.has(name)) &&
      [...rows].every(([name, v]) => record.rows.get(name) === v)
    );
  }

  complete(key: string, nowMs: number, result: unknown, rows: ReadonlyMap<string, number>): ModelRecord {
    const record = this.records.get(key)!;
    record.status = 'COMPLETED';
    record.leaseExpiresAtMs = 0;
    record.result = result;
    for (const [name, v] of rows) record.rows.set(name, v);
    return this.touch(record, nowMs);
  }

  release(key: string, nowMs: number): ModelRecord {
    const record = this.records.get(key)!;
    record.status = 'RELEASED';
    record.leaseExpiresAtMs = 0;
    return this.touch(record, nowMs);
  }

  renew(key: string, nowMs: number): ModelRecord {
    const record = this.records.get(key)!;
    record.leaseExpiresAtMs = nowMs + MODEL_LEASE_MS;
    return this.touch(record, nowMs);
  }

  /** An operator (or a newer version) writes a status this version does not know. */
  editStatus(key: string, status: string): void {
    const record = this.records.get(key)!;
    record.status = status;
    record.version = this.nextVersion++;
  }

  /** The sweep: every expired record goes, with its local rows. @returns how many. */
  sweep(nowMs: number): number {
    let deleted = 0;
    for (const [key, record] of this.records) {
      if (isExpired(record, nowMs)) {
        this.records.delete(key);
        deleted++;
      }
    }
    return deleted;
  }

  private touch(record: ModelRecord, nowMs: number): ModelRecord {
    record.retentionExpiresAtMs = nowMs + MODEL_RETENTION_MS;
    record.version = this.nextVersion++;
    return record;
  }
}
