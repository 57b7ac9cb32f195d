import {
  RecordStatus,
  StoreRequestError,
  StoreUnavailableError,
  type Claim,
  type ClaimOptions,
  type ClaimOutcome,
  type ClaimRequest,
  type CommitOutcome,
  type IdempotencyKey,
  type IdempotencyRecord,
  type LocalEffect,
  type ReopenableStore,
  type ReopenOutcome,
} from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import type { Random } from './random';
import type { World } from './world';

/** What the store's faults are this schedule. */
export interface StoreFaults {
  unavailable: number;
  lostAnswer: number;
  emptyPage: number;
  /** A window of 403 answers (a role change propagating), or none. */
  forbidden?: { readonly fromMs: number; readonly toMs: number };
}

/**
 * The consumer's store in the simulation: the in-memory store (the same decision rules as the Table and Cosmos
 * stores, held to them by the store contract and differential tests) behind Table Storage's latency and faults.
 * Every call waits a few virtual milliseconds each way; a fault is a StoreUnavailableError before the write, after it
 * (the answer lost: `writeMayHaveLanded`), or a StoreRequestError 403 inside the forbidden window.
 */
export class SimStore implements ReopenableStore {
  readonly inner: InMemoryIdempotencyStore;
  /** Store calls made (round trips), for the cost figures. */
  calls = 0;
  /** Told after every write that landed (its answer may still be lost): the invariants judge each step as it happens. */
  onWrite?: (operation: string) => void;

  constructor(
    private readonly world: World,
    private readonly random: Random,
    private readonly faults: StoreFaults,
    options: { leaseMs: number; retentionMs: number },
  ) {
    this.inner = new InMemoryIdempotencyStore({ ...options, clock: world });
  }

  setForbidden(window: { fromMs: number; toMs: number }): void {
    this.faults.forbidden = window;
  }

  /** No more faults (the schedule's quiet phase; a forbidden window already open runs to its end). */
  quiet(): void {
    Object.assign(this.faults, { unavailable: 0, lostAnswer: 0 });
  }

  private async call<T>(operation: string, run: () => Promise<T>, write = true): Promise<T> {
    this.calls++;
    await this.world.sleep(this.random.logBetween(2, 40));
    const now = this.world.nowMs();
    const forbidden = this.faults.forbidden;
    if (forbidden && now >= forbidden.fromMs && now < forbidden.toMs) {
      throw new StoreRequestError(`table answered 403 AuthorizationPermissionMismatch (${operation})`, operation, 403);
    }
    if (this.random.chance(this.faults.unavailable)) {
      await this.world.sleep(this.random.logBetween(100, 5_000));
      throw new StoreUnavailableError(`table did not answer (${operation}: injected timeout)`, operation);
    }
    const answer = await run();
    if (write) this.onWrite?.(operation);
    if (write && this.random.chance(this.faults.lostAnswer)) {
      await this.world.sleep(this.random.logBetween(100, 5_000));
      throw new StoreUnavailableError(`table answer lost (${operation}: injected, the write landed)`, operation, undefined, true);
    }
    await this.world.sleep(this.random.logBetween(2, 40));
    return answer;
  }

  claim(key: IdempotencyKey, digest: string, options?: ClaimOptions): Promise<ClaimOutcome> {
    return this.call('claim', () => this.inner.claim(key, digest, options));
  }
  claimMany(requests: readonly ClaimRequest[], options?: Pick<ClaimOptions, 'leaseMs'>): Promise<ClaimOutcome[]> {
    return this.call('claimMany', () => this.inner.claimMany(requests, options));
  }
  commit(key: IdempotencyKey, digest: string, result: unknown, effects?: readonly LocalEffect[]): Promise<CommitOutcome> {
    return this.call('commit', () => this.inner.commit(key, digest, result, effects));
  }
  complete(claim: Claim, result: unknown, effects?: readonly LocalEffect[]): Promise<IdempotencyRecord> {
    return this.call('complete', () => this.inner.complete(claim, result, effects));
  }
  release(claim: Claim, reason: string): Promise<void> {
    return this.call('release', () => this.inner.release(claim, reason));
  }
  renewLease(claim: Claim, leaseMs?: number): Promise<Claim> {
    return this.call('renewLease', () => this.inner.renewLease(claim, leaseMs));
  }
  get(key: IdempotencyKey): Promise<IdempotencyRecord | undefined> {
    return this.call('get', () => this.inner.get(key), false);
  }
  reopen(record: IdempotencyRecord, reason: string): Promise<ReopenOutcome> {
    return this.call('reopen', () => this.inner.reopen(record, reason));
  }
  readLocalRow(key: IdempotencyKey, name: string): Promise<Readonly<Record<string, unknown>> | undefined> {
    return this.call('readLocalRow', () => this.inner.readLocalRow(key, name), false);
  }

  /**
   * The reconciler's read (as `lapsedInProgressRecords` on the table): `consumer`'s records in progress whose lease
   * lapsed at or before `lapsedBeforeMs`, a page at a time; a page may come back empty with more to read (Azure does).
   */
  async *lapsedInProgress(consumer: string, lapsedBeforeMs: number): AsyncGenerator<IdempotencyRecord> {
    // Rows are read as of each page, after the last row key returned (a continuation token), in row key order.
    let after = '';
    for (;;) {
      const page = await this.call(
        'reconcile.query',
        async () => {
          const rest = this.inner
            .records()
            .filter((r) => r.recordId > after)
            .sort((a, b) => (a.recordId < b.recordId ? -1 : 1));
          const scanned = rest.slice(0, this.faults.emptyPage > 0 ? this.random.int(1, 3) : 100);
          if (scanned.length > 0) after = scanned[scanned.length - 1].recordId;
          const rows = scanned.filter((r) => r.consumer === consumer && r.status === RecordStatus.InProgress && r.leaseExpiresAtMs <= lapsedBeforeMs);
          return { rows, more: rest.length > scanned.length };
        },
        false,
      );
      yield* page.rows;
      if (!page.more) return;
    }
  }
}
