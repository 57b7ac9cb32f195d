import { randomUUID } from 'node:crypto';
import type { Clock } from '../../protocol/clock';
import type { CompletedKeyCache } from '../../protocol/CompletedKeyCache';
import { StoreUnavailableError } from '../../protocol/errors';
import type { ClaimOutcome, ClaimRequest } from '../../protocol/IdempotencyStore';
import { scopedKeyString, type IdempotencyKey } from '../../protocol/keys';
import type { MarkerTable } from './MarkerTable';
import { RecordStatus } from '../../protocol/record';
import { claimOf, decideClaim } from '../../protocol/recordRules';
import type { TableAddress } from './partitions';
import { markerEntity, toRecord, type MarkerFields } from './tableRows';

/** Most actions of one entity-group transaction. */
const MAX_TRANSACTION_ACTIONS = 100;

/** One request of a batch, where it lives and where its answer goes. */
interface Item {
  readonly index: number;
  readonly key: IdempotencyKey;
  readonly digest: string;
  readonly address: TableAddress;
  readonly scoped: string;
}

/** What the batch workflow needs of the store around it. */
export interface ClaimManyDeps {
  readonly table: MarkerTable;
  readonly clock: Clock;
  readonly cache: CompletedKeyCache | undefined;
  readonly fields: (key: IdempotencyKey, address: TableAddress, digest: string, createdAtMs: number, nowMs: number) => MarkerFields;
  readonly addressOf: (key: IdempotencyKey) => TableAddress;
  /** The single-key claim (the rare paths: takeovers, races, unknown statuses). */
  readonly claimOne: (key: IdempotencyKey, digest: string) => Promise<ClaimOutcome>;
  /** True when `ownerId` is a claim of this store whose write may have landed unseen (taken over at once). */
  readonly isUnresolved: (scoped: string, ownerId: string) => boolean;
  readonly remember: (scoped: string, ownerId: string) => void;
}

/**
 * Claims of many keys in the fewest round trips the Table service allows: the keys are grouped by
 * partition and each group's markers are inserted in one entity-group transaction (up to 100).
 * When every key is fresh that is all (1 round trip per partition touched, instead of 1 per key).
 * When the transaction fails because some marker exists (a replay, a producer retry), the group is read
 * in one query per 14 keys, the found records are decided as `claim` decides them (duplicate, key
 * reused, in progress), the absent keys are inserted in one more transaction, and only the rare rest
 * (takeovers, a race with another claimant, an unknown status) goes through `claim` one by one.
 * A transaction without an answer may have landed: its owner ids are remembered (taken over at once by
 * this store's next claim of those keys) and the error is thrown.
 */
export async function claimMany(deps: ClaimManyDeps, requests: readonly ClaimRequest[], leaseMs: number): Promise<ClaimOutcome[]> {
  const outcomes: ClaimOutcome[] = new Array<ClaimOutcome>(requests.length);
  const groups = new Map<string, Item[]>();
  requests.forEach(({ key, digest }, index) => {
    const scoped = scopedKeyString(key);
    const cached = deps.cache?.get(scoped);
    if (cached) {
      outcomes[index] =
        cached.digest === digest ? { kind: 'duplicate', record: cached, cached: true } : { kind: 'keyReused', record: cached, digest, cached: true };
      return;
    }
    const address = deps.addressOf(key);
    const group = groups.get(address.partitionKey) ?? [];
    group.push({ index, key, digest, address, scoped });
    groups.set(address.partitionKey, group);
  });
  await Promise.all([...groups.values()].flatMap((group) => chunks(group, MAX_TRANSACTION_ACTIONS)).map((chunk) => claimChunk(deps, chunk, leaseMs, outcomes)));
  return outcomes;
}

async function claimChunk(deps: ClaimManyDeps, items: readonly Item[], leaseMs: number, outcomes: ClaimOutcome[]): Promise<void> {
  if (await insertAll(deps, items, leaseMs, outcomes)) return;
  const found = await deps.table.readMany(
    items[0].address.partitionKey,
    items.map((item) => item.address.rowKey),
  );
  const now = deps.clock.nowMs();
  const absent: Item[] = [];
  const oneByOne: Item[] = [];
  for (const item of items) {
    const record = found.get(item.address.rowKey);
    if (!record) {
      absent.push(item);
      continue;
    }
    let decision: ReturnType<typeof decideClaim>;
    try {
      decision = decideClaim(record, item.digest, now, item.scoped);
    } catch {
      oneByOne.push(item); // an unknown status: `claim` throws its error
      continue;
    }
    if (decision === 'duplicate') {
      deps.cache?.put(item.scoped, record);
      outcomes[item.index] = { kind: 'duplicate', record, cached: false };
    } else if (decision === 'keyReused') outcomes[item.index] = { kind: 'keyReused', record, digest: item.digest, cached: false };
    else if (decision === 'inProgress' && !deps.isUnresolved(item.scoped, record.ownerId)) outcomes[item.index] = { kind: 'inProgress', record };
    else oneByOne.push(item); // a takeover (lapsed, released, expired, or our own unresolved claim)
  }
  if (absent.length > 0 && !(await insertAll(deps, absent, leaseMs, outcomes))) oneByOne.push(...absent);
  await Promise.all(oneByOne.map(async (item) => (outcomes[item.index] = await deps.claimOne(item.key, item.digest))));
}

/** Inserts every item's fresh marker in one transaction. @returns false when one of them exists. */
async function insertAll(deps: ClaimManyDeps, items: readonly Item[], leaseMs: number, outcomes: ClaimOutcome[]): Promise<boolean> {
  const now = deps.clock.nowMs();
  const markers = items.map((item) =>
    markerEntity(deps.fields(item.key, item.address, item.digest, now, now), {
      status: RecordStatus.InProgress,
      ownerId: randomUUID(),
      attempt: 1,
      leaseExpiresAtMs: now + leaseMs,
      resultJson: undefined,
      localRows: [],
    }),
  );
  let written: Awaited<ReturnType<MarkerTable['createMany']>>;
  try {
    written = items.length === 1 ? await writeOne(deps, markers[0]) : await deps.table.createMany(markers, 'claimMany');
  } catch (error) {
    if (error instanceof StoreUnavailableError && error.writeMayHaveLanded) items.forEach((item, i) => deps.remember(item.scoped, String(markers[i].ownerId)));
    throw error;
  }
  if ('conflict' in written) return false;
  items.forEach((item, i) => {
    const record = toRecord({ ...markers[i], etag: written.etags[i] });
    outcomes[item.index] = { kind: 'claimed', claim: claimOf(item.key, item.digest, record) };
  });
  return true;
}

async function writeOne(deps: ClaimManyDeps, marker: Parameters<MarkerTable['write']>[0]): ReturnType<MarkerTable['createMany']> {
  const written = await deps.table.write(marker, [], [], 'create', undefined, 'claimMany');
  return 'etag' in written ? { etags: [written.etag] } : written;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
