import { RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency';
import {
  classifyCharge,
  ledgerCheckTick,
  ledgerGraceMs,
  LEDGER_GRACE_MARGIN_MS,
  MAX_PENDING,
  type LedgerCheckDeps,
  type LedgerCheckpoint,
  type LedgerDiscrepancy,
} from '../../src/payments/ledgerCheck';
import type { ChargeListPage, ListedCharge } from '../../src/payments/PaymentProviderClient';
import { RECORD_WRITE_RETRY } from '../../src/payments/recordWriteRetry';

const GRACE = 10 * 60_000;
const NOW = 1_000_000_000;

const charge = (id: string, key: string | undefined, createdMs: number, status: ListedCharge['status'] = 'succeeded'): ListedCharge => ({
  id,
  status,
  amount: 100,
  currency: 'EUR',
  idempotencyKey: key,
  createdMs,
});

const record = (key: string, status: RecordStatus, result?: unknown): IdempotencyRecord => ({
  recordId: `r-${key}`,
  consumer: 'payments',
  key,
  status,
  digest: 'd',
  result,
  attempt: 1,
  ownerId: 'o',
  leaseExpiresAtMs: 0,
  retentionExpiresAtMs: NOW + 1e9,
  createdAtMs: NOW - 1000,
  updatedAtMs: NOW - 1000,
  localRows: [],
  etag: 'e',
});
const succeeded = (key: string, chargeId: string) => record(key, RecordStatus.Completed, { status: 'succeeded', chargeId, amount: 100, currency: 'EUR' });

describe('ledger check: each charge classified against its record', () => {
  test('a record completed succeeded with that very charge id is matched', () => {
    expect(classifyCharge(charge('ch_1', 'pay-1', NOW - 1000), succeeded('pay-1', 'ch_1'), NOW, GRACE)).toEqual({ kind: 'matched' });
  });

  test('no record for the key is a discrepancy (no-record)', () => {
    expect(classifyCharge(charge('ch_1', 'pay-1', NOW - 1000), undefined, NOW, GRACE)).toMatchObject({ kind: 'discrepancy', reason: 'no-record' });
  });

  test('a record completed succeeded with another charge is a discrepancy (record-other-charge)', () => {
    expect(classifyCharge(charge('ch_1', 'pay-1', NOW - 1000), succeeded('pay-1', 'ch_2'), NOW, GRACE)).toMatchObject({
      kind: 'discrepancy',
      reason: 'record-other-charge',
    });
  });

  test.each(['failed', 'declined', 'rejected'])('a record completed %s while the provider charged is a discrepancy (record-not-succeeded)', (status) => {
    const verdict = classifyCharge(charge('ch_1', 'pay-1', NOW - 1000), record('pay-1', RecordStatus.Completed, { status, reason: 'x' }), NOW, GRACE);
    expect(verdict).toMatchObject({ kind: 'discrepancy', reason: 'record-not-succeeded' });
    expect(verdict.kind === 'discrepancy' && verdict.detail).toContain(status);
  });

  test('a charge made without a key is a discrepancy (no-key); a failed charge took no money (not-charged)', () => {
    expect(classifyCharge(charge('ch_1', undefined, NOW - 1000), undefined, NOW, GRACE)).toMatchObject({ kind: 'discrepancy', reason: 'no-key' });
    expect(classifyCharge(charge('ch_1', 'pay-1', NOW - 1000, 'failed'), undefined, NOW, GRACE)).toEqual({ kind: 'not-charged' });
  });

  test('a record in progress or released, or a pending charge, is undecided within the grace and a discrepancy past it', () => {
    for (const status of [RecordStatus.InProgress, RecordStatus.Released]) {
      expect(classifyCharge(charge('ch_1', 'pay-1', NOW - GRACE), record('pay-1', status), NOW, GRACE)).toEqual({
        kind: 'undecided',
        why: 'record-in-progress',
      });
      expect(classifyCharge(charge('ch_1', 'pay-1', NOW - GRACE - 1), record('pay-1', status), NOW, GRACE)).toMatchObject({
        kind: 'discrepancy',
        reason: 'undecided-past-grace',
      });
    }
    expect(classifyCharge(charge('ch_1', 'pay-1', NOW - 1, 'pending'), succeeded('pay-1', 'ch_1'), NOW, GRACE)).toEqual({
      kind: 'undecided',
      why: 'charge-pending',
    });
    expect(classifyCharge(charge('ch_1', 'pay-1', NOW - GRACE - 1, 'pending'), succeeded('pay-1', 'ch_1'), NOW, GRACE)).toMatchObject({
      reason: 'undecided-past-grace',
    });
  });

  test('the grace is the retry budget plus the record write retries plus the margin (defaults: 60 min + 7 d + 60 min)', () => {
    expect(ledgerGraceMs({ budgetMs: 60 * 60_000 })).toBe(60 * 60_000 + RECORD_WRITE_RETRY.budgetMs + LEDGER_GRACE_MARGIN_MS);
    expect(RECORD_WRITE_RETRY.budgetMs).toBe(7 * 86_400_000);
    expect(ledgerGraceMs({ budgetMs: 1 }, { budgetMs: 2 })).toBe(3 + LEDGER_GRACE_MARGIN_MS);
  });

  test("each discrepancy's detail says what the record holds, for the operator who checks the charge (the code when the record has one, the grace in minutes)", () => {
    const detailOf = (verdict: ReturnType<typeof classifyCharge>) => (verdict.kind === 'discrepancy' ? verdict.detail : `not a discrepancy: ${verdict.kind}`);
    const recent = charge('ch_1', 'pay-1', NOW - 1000);
    expect(detailOf(classifyCharge(charge('ch_1', undefined, NOW - 1000), undefined, NOW, GRACE))).toBe('a charge made without an Idempotency-Key');
    expect(detailOf(classifyCharge(recent, undefined, NOW, GRACE))).toBe('no payments record for the key');
    expect(detailOf(classifyCharge(recent, succeeded('pay-1', 'ch_2'), NOW, GRACE))).toBe('record completed succeeded with another charge');
    const completed = (result: unknown) => detailOf(classifyCharge(recent, record('pay-1', RecordStatus.Completed, result), NOW, GRACE));
    expect(completed({ status: 'declined', reason: 'x', code: 'card_declined' })).toBe('record completed declined (card_declined)');
    expect(completed({ status: 'failed', reason: 'x' })).toBe('record completed failed');
    expect(completed({ status: 'failed', reason: 'x', code: 42 })).toBe('record completed failed');
    expect(completed(undefined)).toBe('record completed without a result');
    const old = (status: ListedCharge['status']) => charge('ch_1', 'pay-1', NOW - GRACE - 1, status);
    expect(detailOf(classifyCharge(old('succeeded'), record('pay-1', RecordStatus.InProgress), NOW, GRACE))).toBe(
      'record IN_PROGRESS for longer than the grace (10 min)',
    );
    expect(detailOf(classifyCharge(old('pending'), succeeded('pay-1', 'ch_1'), NOW, GRACE))).toBe(
      'charge pending at the provider for longer than the grace (10 min)',
    );
  });
});

/** A provider list over `charges` (ascending by created, id), `limit` per page, optional empty pages with has_more before each real one. */
function providerOf(charges: ListedCharge[], options: { limit?: number; emptyPagesFirst?: number } = {}) {
  const sorted = [...charges].sort((a, b) => a.createdMs - b.createdMs || a.id.localeCompare(b.id));
  const calls: Array<{ fromMs: number; toMs: number; cursor?: string }> = [];
  let empties = options.emptyPagesFirst ?? 0;
  const list = async (window: { fromMs: number; toMs: number }, cursor?: string): Promise<ChargeListPage> => {
    calls.push({ ...window, cursor });
    if (empties > 0) {
      empties--;
      return { charges: [], nextCursor: cursor ?? '' };
    }
    const inWindow = sorted.filter((c) => c.createdMs >= window.fromMs && c.createdMs < window.toMs);
    const start = cursor ? inWindow.findIndex((c) => c.id === cursor) + 1 : 0;
    const limit = options.limit ?? 2;
    const page = inWindow.slice(start, start + limit);
    return start + limit < inWindow.length ? { charges: page, nextCursor: page[page.length - 1].id } : { charges: page };
  };
  return { list, calls };
}

function depsOf(overrides: Partial<LedgerCheckDeps> & Pick<LedgerCheckDeps, 'list'>, records: Map<string, IdempotencyRecord>) {
  const reported: LedgerDiscrepancy[] = [];
  const seen = new Set<string>();
  let now = NOW;
  const deps: LedgerCheckDeps = {
    record: async (key) => records.get(key),
    owns: () => true,
    report: async (d) => {
      const first = !seen.has(d.chargeId);
      seen.add(d.chargeId);
      if (first) reported.push(d);
      return first;
    },
    nowMs: () => now,
    delayMs: 0,
    retentionMs: 30 * 86_400_000,
    graceMs: GRACE,
    maxPages: 100,
    budgetMs: 60_000,
    ...overrides,
  };
  return { deps, reported, advance: (ms: number) => (now += ms) };
}

describe('ledger check: one tick walks the window and keeps its checkpoint', () => {
  const start: LedgerCheckpoint = { fromMs: NOW - 60_000, pending: [] };

  test('every charge of the window is matched or reported; the checkpoint moves to the window end; a second tick reports nothing new', async () => {
    const charges = [charge('ch_a', 'pay-a', NOW - 50_000), charge('ch_b', 'pay-b', NOW - 40_000), charge('ch_c', 'pay-c', NOW - 30_000)];
    const records = new Map([
      ['pay-a', succeeded('pay-a', 'ch_a')],
      ['pay-b', record('pay-b', RecordStatus.Completed, { status: 'failed', reason: 'budget' })],
      ['pay-c', succeeded('pay-c', 'ch_c')],
    ]);
    const provider = providerOf(charges);
    const { deps, reported, advance } = depsOf({ list: provider.list }, records);
    const first = await ledgerCheckTick(start, deps);
    expect(first.matched).toBe(2);
    expect(reported.map((d) => [d.paymentId, d.chargeId, d.reason])).toEqual([['pay-b', 'ch_b', 'record-not-succeeded']]);
    expect(first.checkpoint).toEqual({ fromMs: NOW, pending: [] });
    expect(first.pages).toBe(2); // limit 2: two pages for three charges
    advance(10_000);
    const second = await ledgerCheckTick(first.checkpoint, deps);
    expect(second.discrepancies).toEqual([]);
    expect(second.matched).toBe(0);
    expect(provider.calls[provider.calls.length - 1]).toMatchObject({ fromMs: NOW, toMs: NOW + 10_000 });
  });

  test('the window ends the declared delay before now: a charge younger than it is left for a later tick', async () => {
    const charges = [charge('ch_a', 'pay-a', NOW - 50_000), charge('ch_late', 'pay-late', NOW - 5_000)];
    const provider = providerOf(charges);
    const { deps, reported } = depsOf({ list: provider.list, delayMs: 10_000 }, new Map([['pay-a', succeeded('pay-a', 'ch_a')]]));
    const report = await ledgerCheckTick(start, deps);
    expect(report.matched).toBe(1);
    expect(reported).toEqual([]); // pay-late has no record yet, but it is not in the window
    expect(report.checkpoint.fromMs).toBe(NOW - 10_000);
  });

  test('empty pages that say there is more do not end the walk', async () => {
    const charges = [charge('ch_a', 'pay-a', NOW - 50_000)];
    const provider = providerOf(charges, { emptyPagesFirst: 3 });
    const { deps, reported } = depsOf({ list: provider.list }, new Map());
    const report = await ledgerCheckTick(start, deps);
    expect(reported.map((d) => d.chargeId)).toEqual(['ch_a']);
    expect(report.pages).toBe(4);
    expect(report.checkpoint.fromMs).toBe(NOW);
  });

  test('bounded pages per tick: the checkpoint keeps the cursor and the next tick goes on from it, reading no charge twice', async () => {
    const charges = Array.from({ length: 7 }, (_, i) => charge(`ch_${i}`, `pay-${i}`, NOW - 50_000 + i));
    const seen: string[] = [];
    const provider = providerOf(charges);
    const { deps } = depsOf(
      {
        list: provider.list,
        maxPages: 2,
        record: async (key) => {
          seen.push(key);
          return succeeded(key, `ch_${key.slice(4)}`);
        },
      },
      new Map(),
    );
    const first = await ledgerCheckTick(start, deps);
    expect(first.stoppedBy).toBe('pages');
    expect(first.checkpoint).toEqual({ fromMs: start.fromMs, cursor: 'ch_3', pending: [] });
    const second = await ledgerCheckTick(first.checkpoint, deps);
    expect(second.stoppedBy).toBeUndefined();
    expect(first.matched + second.matched).toBe(7);
    expect(seen).toEqual(charges.map((c) => c.idempotencyKey));
  });

  test('the time budget stops the walk before the next page', async () => {
    const charges = Array.from({ length: 6 }, (_, i) => charge(`ch_${i}`, `pay-${i}`, NOW - 50_000 + i));
    const provider = providerOf(charges);
    let now = NOW;
    const { deps } = depsOf({ list: async (w, c) => ((now += 30_000), provider.list(w, c)), nowMs: () => now, budgetMs: 45_000 }, new Map());
    const report = await ledgerCheckTick(start, deps);
    expect(report.stoppedBy).toBe('budget');
    expect(report.pages).toBe(2);
    expect(report.checkpoint.cursor).toBe('ch_3');
  });

  test('an undecided charge is carried in the checkpoint and decided on a later tick (matched once its record completes)', async () => {
    const records = new Map([['pay-a', record('pay-a', RecordStatus.InProgress)]]);
    const provider = providerOf([charge('ch_a', 'pay-a', NOW - 50_000)]);
    const { deps, reported, advance } = depsOf({ list: provider.list }, records);
    const first = await ledgerCheckTick(start, deps);
    expect(first.checkpoint.pending).toEqual([expect.objectContaining({ id: 'ch_a', paymentId: 'pay-a', why: 'record-in-progress' })]);
    expect(first.checkpoint.fromMs).toBe(NOW);
    records.set('pay-a', succeeded('pay-a', 'ch_a'));
    advance(1000);
    const second = await ledgerCheckTick(first.checkpoint, deps);
    expect(second.matched).toBe(1);
    expect(second.checkpoint.pending).toEqual([]);
    expect(reported).toEqual([]);
  });

  test('an undecided charge still undecided past the grace is reported once and dropped from the checkpoint', async () => {
    const records = new Map([['pay-a', record('pay-a', RecordStatus.InProgress)]]);
    const provider = providerOf([charge('ch_a', 'pay-a', NOW - 50_000)]);
    const { deps, reported, advance } = depsOf({ list: provider.list }, records);
    const first = await ledgerCheckTick(start, deps);
    advance(GRACE);
    const second = await ledgerCheckTick(first.checkpoint, deps);
    expect(reported.map((d) => [d.chargeId, d.reason])).toEqual([['ch_a', 'undecided-past-grace']]);
    expect(second.checkpoint.pending).toEqual([]);
  });

  test('the pending list is bounded: full, the walk stops before the next undecided charge and never skips it', async () => {
    const charges = Array.from({ length: 5 }, (_, i) => charge(`ch_${i}`, `pay-${i}`, NOW - 50_000 + i));
    const records = new Map(charges.map((c) => [c.idempotencyKey!, record(c.idempotencyKey!, RecordStatus.InProgress)]));
    const provider = providerOf(charges);
    const { deps } = depsOf({ list: provider.list, maxPending: 3 }, records);
    const first = await ledgerCheckTick(start, deps);
    expect(first.stoppedBy).toBe('pending-full');
    expect(first.checkpoint.pending.map((p) => p.id)).toEqual(['ch_0', 'ch_1', 'ch_2']);
    expect(first.checkpoint).toMatchObject({ fromMs: start.fromMs, cursor: 'ch_2' });
    // Two settle: the walk goes on from ch_3.
    records.set('pay-0', succeeded('pay-0', 'ch_0'));
    records.set('pay-1', succeeded('pay-1', 'ch_1'));
    const second = await ledgerCheckTick(first.checkpoint, deps);
    expect(second.checkpoint.pending.map((p) => p.id)).toEqual(['ch_2', 'ch_3', 'ch_4']);
    expect(second.checkpoint.fromMs).toBe(NOW);
    expect(MAX_PENDING).toBeGreaterThanOrEqual(100);
  });

  test('charges of keys another shard owns are not read here', async () => {
    const provider = providerOf([charge('ch_a', 'pay-a', NOW - 50_000), charge('ch_b', 'pay-b', NOW - 40_000)]);
    const read: string[] = [];
    const { deps, reported } = depsOf(
      {
        list: provider.list,
        owns: (key) => key === 'pay-a',
        record: async (key) => (read.push(key), undefined),
      },
      new Map(),
    );
    const report = await ledgerCheckTick(start, deps);
    expect(read).toEqual(['pay-a']);
    expect(report.otherShard).toBe(1);
    expect(reported.map((d) => d.chargeId)).toEqual(['ch_a']);
  });

  test('a checkpoint older than the retention is clipped to it (said in the report), and the cursor dropped', async () => {
    const provider = providerOf([]);
    const { deps } = depsOf({ list: provider.list, retentionMs: 30_000 }, new Map());
    const report = await ledgerCheckTick({ fromMs: NOW - 60_000, cursor: 'ch_x', pending: [] }, deps);
    expect(report.clippedFromMs).toBe(NOW - 60_000);
    expect(provider.calls[0]).toEqual({ fromMs: NOW - 30_000, toMs: NOW, cursor: undefined });
  });

  test('a failing list page ends the tick with what was done in the checkpoint and the error, never past the failed page', async () => {
    const charges = Array.from({ length: 5 }, (_, i) => charge(`ch_${i}`, `pay-${i}`, NOW - 50_000 + i));
    const provider = providerOf(charges);
    let calls = 0;
    const failure = new Error('503');
    const { deps } = depsOf(
      {
        list: async (w, c) => {
          if (++calls === 2) throw failure;
          return provider.list(w, c);
        },
        record: async (key) => succeeded(key, `ch_${key.slice(4)}`),
      },
      new Map(),
    );
    const report = await ledgerCheckTick(start, deps);
    expect(report.error).toBe(failure);
    expect(report.matched).toBe(2);
    expect(report.checkpoint).toEqual({ fromMs: start.fromMs, cursor: 'ch_1', pending: [] });
  });

  test('a discrepancy an overlapping tick already recorded is not reported twice', async () => {
    const provider = providerOf([charge('ch_a', 'pay-a', NOW - 50_000)]);
    const { deps, reported } = depsOf({ list: provider.list }, new Map());
    const one = await ledgerCheckTick(start, deps);
    const two = await ledgerCheckTick(start, deps);
    expect(reported).toHaveLength(1);
    expect(one.discrepancies).toHaveLength(1);
    expect(two.discrepancies).toHaveLength(0);
    expect(two.alreadyReported).toBe(1);
  });
});

describe('ledger check: the undecided charges carried from tick to tick', () => {
  const pendingEntry = (id: string, key: string, createdMs: number) => ({ id, paymentId: key, createdMs, why: 'charge-pending' as const });

  test('a charge carried as pending is read again from its own list entry (its created ms alone) and decided: matched once it succeeded', async () => {
    // Another charge of the same millisecond (failed) is listed beside it: only its own entry decides it.
    const listed = [charge('ch_0', 'pay-0', NOW - 50_000, 'failed'), charge('ch_a', 'pay-a', NOW - 50_000, 'pending')];
    const provider = providerOf(listed);
    const { deps, reported } = depsOf({ list: provider.list }, new Map([['pay-a', succeeded('pay-a', 'ch_a')]]));
    const first = await ledgerCheckTick({ fromMs: NOW - 60_000, pending: [] }, deps);
    expect(first.checkpoint.pending).toEqual([pendingEntry('ch_a', 'pay-a', NOW - 50_000)]);
    listed[1] = charge('ch_a', 'pay-a', NOW - 50_000, 'succeeded');
    const again = providerOf(listed);
    const second = await ledgerCheckTick({ ...first.checkpoint, pending: first.checkpoint.pending }, { ...deps, list: again.list });
    expect(again.calls[0]).toEqual({ fromMs: NOW - 50_000, toMs: NOW - 50_000 + 1, cursor: undefined });
    expect([second.matched, second.notCharged]).toEqual([1, 0]);
    expect(second.pages).toBe(1);
    expect(second.checkpoint.pending).toEqual([]);
    expect(reported).toEqual([]);
  });

  test('a charge carried for its record in progress is read again from its record alone: no list request for it', async () => {
    const provider = providerOf([]);
    const { deps } = depsOf({ list: provider.list }, new Map([['pay-a', succeeded('pay-a', 'ch_a')]]));
    const carried = { id: 'ch_a', paymentId: 'pay-a', createdMs: NOW - 50_000, why: 'record-in-progress' as const };
    const report = await ledgerCheckTick({ fromMs: NOW, pending: [carried] }, deps);
    expect(report.matched).toBe(1);
    expect(provider.calls).toEqual([]);
    expect(report.pages).toBe(0);
  });

  test('a charge carried as pending that is no longer listed: kept within the grace, reported past it with what happened', async () => {
    const provider = providerOf([]);
    const createdMs = NOW - GRACE;
    const { deps, reported, advance } = depsOf({ list: provider.list }, new Map());
    const within = await ledgerCheckTick({ fromMs: NOW, pending: [pendingEntry('ch_gone', 'pay-g', createdMs)] }, deps);
    expect(within.checkpoint.pending).toEqual([pendingEntry('ch_gone', 'pay-g', createdMs)]);
    expect(reported).toEqual([]);
    advance(1);
    const past = await ledgerCheckTick(within.checkpoint, deps);
    expect(past.checkpoint.pending).toEqual([]);
    expect(reported).toEqual([
      {
        chargeId: 'ch_gone',
        paymentId: 'pay-g',
        createdMs,
        reason: 'undecided-past-grace',
        detail: 'charge pending, then no longer listed, for longer than the grace',
      },
    ]);
  });

  test('the page bound, or the time budget, reached among the carried charges: the rest kept in order, the window not walked', async () => {
    const carried = [pendingEntry('ch_1', 'pay-1', NOW - 3_000), pendingEntry('ch_2', 'pay-2', NOW - 2_000), pendingEntry('ch_3', 'pay-3', NOW - 1_000)];
    const provider = providerOf(carried.map((p) => charge(p.id, p.paymentId, p.createdMs, 'pending')));
    const { deps } = depsOf({ list: provider.list, maxPages: 1 }, new Map());
    const byPages = await ledgerCheckTick({ fromMs: NOW - 60_000, pending: carried }, deps);
    expect(byPages.stoppedBy).toBe('pages');
    // ch_1 was read (one page) and decided; the others wait, in order, and the window stays where it was.
    expect(byPages.checkpoint).toEqual({ fromMs: NOW - 60_000, pending: carried.slice(1) });
    expect(provider.calls).toHaveLength(1);
    let now = NOW;
    const slow = depsOf({ list: async (w, c) => ((now += 30_000), provider.list(w, c)), nowMs: () => now, budgetMs: 30_000 }, new Map()).deps;
    const byBudget = await ledgerCheckTick({ fromMs: NOW - 60_000, pending: carried }, slow);
    expect(byBudget.stoppedBy).toBe('budget');
    expect(byBudget.checkpoint).toEqual({ fromMs: NOW - 60_000, pending: carried.slice(1) });
  });
});

describe('ledger check: the edges of one tick', () => {
  const start: LedgerCheckpoint = { fromMs: NOW - 60_000, pending: [] };

  test('a tick at the end of the window already checked asks nothing and moves nothing', async () => {
    const provider = providerOf([charge('ch_a', 'pay-a', NOW - 50_000)]);
    const { deps } = depsOf({ list: provider.list }, new Map([['pay-a', succeeded('pay-a', 'ch_a')]]));
    const report = await ledgerCheckTick({ fromMs: NOW, pending: [] }, deps);
    expect(provider.calls).toEqual([]);
    expect(report.checkpoint).toEqual({ fromMs: NOW, pending: [] });
  });

  test('a checkpoint exactly at the retention edge is not clipped: its cursor kept', async () => {
    const provider = providerOf([]);
    const retentionMs = 60_000;
    const { deps } = depsOf({ list: provider.list, retentionMs, maxPages: 0 }, new Map());
    const report = await ledgerCheckTick({ fromMs: NOW - retentionMs, cursor: 'ch_9', pending: [] }, deps);
    expect(report.clippedFromMs).toBeUndefined();
    expect(report.checkpoint).toEqual({ fromMs: NOW - retentionMs, cursor: 'ch_9', pending: [] });
  });

  test('the time budget spent exactly stops the walk', async () => {
    const provider = providerOf(Array.from({ length: 6 }, (_, i) => charge(`ch_${i}`, `pay-${i}`, NOW - 50_000 + i)));
    let now = NOW;
    const { deps } = depsOf({ list: async (w, c) => ((now += 30_000), provider.list(w, c)), nowMs: () => now, budgetMs: 60_000 }, new Map());
    const report = await ledgerCheckTick(start, deps);
    expect([report.stoppedBy, report.pages]).toEqual(['budget', 2]);
  });

  test('a full pending list stops the walk only before an undecided charge: a charge with a verdict is still handled', async () => {
    const charges = [charge('ch_0', 'pay-0', NOW - 50_000), charge('ch_1', 'pay-1', NOW - 40_000)];
    const records = new Map([
      ['pay-0', record('pay-0', RecordStatus.InProgress)],
      ['pay-1', succeeded('pay-1', 'ch_1')],
    ]);
    const { deps } = depsOf({ list: providerOf(charges).list, maxPending: 1 }, records);
    const report = await ledgerCheckTick(start, deps);
    expect(report.stoppedBy).toBeUndefined();
    expect(report.matched).toBe(1);
    expect(report.checkpoint.pending.map((p) => p.id)).toEqual(['ch_0']);
  });

  test("an empty page whose cursor is the window's start leaves no cursor in the checkpoint", async () => {
    const { deps } = depsOf({ list: providerOf([charge('ch_a', 'pay-a', NOW - 50_000)], { emptyPagesFirst: 1 }).list, maxPages: 1 }, new Map());
    const report = await ledgerCheckTick(start, deps);
    expect(report.stoppedBy).toBe('pages');
    expect(report.checkpoint).toEqual({ fromMs: start.fromMs, pending: [] });
  });

  test('a charge made without a key is reported under no payment; a failed charge is counted not charged, its record never read', async () => {
    const read: string[] = [];
    const charges = [charge('ch_k', undefined, NOW - 50_000), charge('ch_f', 'pay-f', NOW - 40_000, 'failed')];
    const { deps, reported } = depsOf({ list: providerOf(charges).list, record: async (key) => (read.push(key), undefined) }, new Map());
    const report = await ledgerCheckTick(start, deps);
    expect(reported.map((d) => [d.chargeId, d.paymentId, d.reason])).toEqual([['ch_k', '', 'no-key']]);
    expect(report.notCharged).toBe(1);
    expect(read).toEqual([]);
  });

  test("a page's records are each read once, at most readConcurrency at once", async () => {
    const charges = Array.from({ length: 5 }, (_, i) => charge(`ch_${i}`, `pay-${i}`, NOW - 50_000 + i));
    let inFlight = 0;
    let most = 0;
    const read: string[] = [];
    const record = async (key: string) => {
      read.push(key);
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      return succeeded(key, `ch_${key.slice(4)}`);
    };
    const { deps } = depsOf({ list: providerOf(charges, { limit: 5 }).list, record, readConcurrency: 2 }, new Map());
    const report = await ledgerCheckTick(start, deps);
    expect(report.matched).toBe(5);
    expect(read).toEqual(charges.map((c) => c.idempotencyKey));
    expect(most).toBe(2);
  });
});
