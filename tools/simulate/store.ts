import {
  StoreRequestError,
  StoreUnavailableError,
  type Claim,
  type ClaimOptions,
  type CompleteOptions,
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
  /** A scenario's hook: told when a request reaches the store, before it is applied (it may hold the request). */
  onArrival?: (operation: string) => Promise<void> | void;

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
    await this.world.sleep(this.random.logBetween(2, 40), true); // the request on its way: it lands if its sender dies
    await this.onArrival?.(operation);
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
  complete(claim: Claim, result: unknown, effects?: readonly LocalEffect[], options?: CompleteOptions): Promise<IdempotencyRecord> {
    return this.call('complete', () => this.inner.complete(claim, result, effects, options));
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

  /** One page of a query (the reconciler's: tableQuery.ts), with a store call's latency and faults. */
  query<T>(operation: string, run: () => Promise<T>): Promise<T> {
    return this.call(operation, run, false);
  }
}
