import type { TableClient } from '@azure/data-tables';
import { RestError } from '@azure/core-rest-pipeline';
import {
  IdempotencyError,
  KeyInProgressError,
  KeyReusedError,
  keyFromMessageId,
  LeaseLostError,
  makeIdempotent,
  payloadDigest,
  ResultTooLargeError,
  TableIdempotencyStore,
  UnknownRecordStatusError,
  type Claim,
  type ClaimOutcome,
  type LocalEffect,
} from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import { mulberry32 } from '../../tools/fakeProvider/FakePaymentProvider';
import { useAzurite } from '../support/azurite';
import { MODEL_LEASE_MS, MODEL_RETENTION_MS, RecordModel, type ModelDecision } from '../support/recordModel';
import { FakeClock, freshTable } from '../support/tables';

/**
 * Model-based test of the store, the sweep and makeIdempotent on a real Azurite (started by
 * this file on a free loopback port). Seeded random sequences of claims, commits with local
 * rows, completions, releases, renewals, makeIdempotent calls (failing work, results too large,
 * observers that throw), hand-edited statuses, clock jumps to and past leases and retention,
 * sweeps, lost answers and outages; after every step the outcome and the whole table are
 * compared with the reference model (test/support/recordModel.ts).
 *
 * Reproduce a failure with the seed it prints: MODEL_SEED=<seed> MODEL_RUNS=1 npx jest test/integration/recordModel.test.ts
 *
 * Its twin, test/integration/storeDifferential.test.ts, runs the in-memory store and the Table store side
 * by side on the same random sequences (with delayed, lost, refused and hanging answers) and reports the
 * first step where they disagree.
 */

const BASE_SEED = Number(process.env.MODEL_SEED ?? 20261130);
const RUNS = Number(process.env.MODEL_RUNS ?? 10);
const STEPS = Number(process.env.MODEL_STEPS ?? 60);
/** Wall-time bound: no new sequence starts after this (the suite runs on a shared 2-core machine). */
const TIME_BOUND_MS = Number(process.env.MODEL_TIME_BOUND_MS ?? 60_000);

const KEYS = ['k0', 'k1', 'k2'];
const ROW_NAMES = ['a', 'b', 'c'];
const MAX_RESULT_BYTES = 2_000;
const CONSUMER = 'model';

const azuriteOf = useAzurite();

type Fault = 'none' | 'loseNext' | 'loseWrites' | 'down';

interface Held {
  readonly key: string;
  readonly owner: number;
  claim: Claim;
  version: number;
}

class Mismatch extends Error {}

/** Every request of the client passes here: faults are switched per step. */
function faultPolicy(client: TableClient): { mode: Fault } {
  const faults = { mode: 'none' as Fault };
  client.pipeline.addPolicy(
    {
      name: 'modelFaults',
      sendRequest: async (request, next) => {
        if (faults.mode === 'down') throw new RestError('connect ECONNREFUSED (model outage)', { code: 'ECONNREFUSED', request });
        const response = await next(request);
        const lose = faults.mode === 'loseNext' || (faults.mode === 'loseWrites' && request.method !== 'GET');
        if (faults.mode === 'loseNext') faults.mode = 'none';
        if (lose) throw new RestError('socket hang up (model: answer lost after the server acted)', { code: 'ECONNRESET', request });
        return response;
      },
    },
    { afterPhase: 'Retry' },
  );
  return faults;
}

const digestOf = (d: string): string => payloadDigest({ d });
const keyOf = (key: string) => keyFromMessageId(CONSUMER, key);

async function runSequence(seed: number, steps: number): Promise<number> {
  const random = mulberry32(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const chance = (p: number): boolean => random() < p;

  const clock = new FakeClock(1_800_000_000_000);
  const client = await freshTable(azuriteOf(), 'm');
  const faults = faultPolicy(client);
  const store = new TableIdempotencyStore(client, { retentionMs: MODEL_RETENTION_MS, leaseMs: MODEL_LEASE_MS, maxResultBytes: MAX_RESULT_BYTES, clock });
  const sweeper = new ExpirySweeper(client, { budgetMs: 600_000, clock, partitionCount: 16 });
  const model = new RecordModel();
  const held: Held[] = [];
  const trace: string[] = [];

  const fail = (step: number, message: string): never => {
    throw new Mismatch(`model mismatch (seed ${seed}, step ${step}): ${message}\n  last steps:\n    ${trace.slice(-12).join('\n    ')}`);
  };
  const check = (step: number, ok: boolean, message: () => string): void => {
    if (!ok) fail(step, message());
  };
  const effectsOf = (rows: ReadonlyMap<string, number>): LocalEffect[] => [...rows].map(([name, v]) => ({ name, properties: { v } }));
  const randomRows = (): Map<string, number> => {
    const rows = new Map<string, number>();
    for (const name of ROW_NAMES) if (chance(0.35)) rows.set(name, Math.floor(random() * 1000));
    return rows;
  };
  const faultFor = (allowed: readonly Fault[]): Fault => {
    const r = random();
    if (r < 0.1 && allowed.includes('loseNext')) return 'loseNext';
    if (r < 0.16 && allowed.includes('loseWrites')) return 'loseWrites';
    if (r < 0.21 && allowed.includes('down')) return 'down';
    return 'none';
  };
  /** Runs `action` under `fault`; the error, if any, is returned. */
  const underFault = async <T>(fault: Fault, action: () => Promise<T>): Promise<{ value?: T; error?: unknown }> => {
    faults.mode = fault;
    try {
      return { value: await action() };
    } catch (error) {
      return { error };
    } finally {
      faults.mode = 'none';
    }
  };
  const expectUnavailable = (step: number, error: unknown, what: string): void =>
    check(step, error instanceof IdempotencyError && error.retryable, () => `${what} under an outage should fail retryably, got ${show(error)}`);

  /** The claim-like outcome the model expects for `decision`. */
  const expectClaimOutcome = (step: number, decision: ModelDecision, got: { value?: ClaimOutcome; error?: unknown }, what: string): boolean => {
    if (decision === 'unknownStatus') {
      check(
        step,
        got.error instanceof UnknownRecordStatusError,
        () => `${what}: a record with an unknown status must be refused, got ${show(got.error ?? got.value)}`,
      );
      return false;
    }
    if (got.error !== undefined) fail(step, `${what}: expected ${decision}, got ${show(got.error)}`);
    const kind = got.value!.kind;
    const expected = {
      absent: 'claimed',
      expired: 'reclaimed',
      takeover: 'reclaimed',
      duplicate: 'duplicate',
      inProgress: 'inProgress',
      keyReused: 'keyReused',
    }[decision];
    check(step, kind === expected, () => `${what}: expected ${expected} (${decision}), got ${kind}`);
    return kind === 'claimed' || kind === 'reclaimed';
  };

  for (let step = 0; step < steps; step++) {
    const now = clock.now;
    const r = random();
    if (r < 0.22) {
      // claim, with local rows
      const key = pick(KEYS);
      const d = chance(0.8) ? 'A' : 'B';
      const rows = chance(0.7) ? randomRows() : new Map<string, number>();
      const fault = faultFor(['loseNext', 'loseWrites', 'down']);
      trace.push(`${step}: claim ${key} ${d} rows=[${[...rows.keys()]}] fault=${fault} t=${now}`);
      const decision = model.decide(key, digestOf(d), now);
      const got = await underFault(fault, () => store.claim(keyOf(key), digestOf(d), { effects: effectsOf(rows) }));
      if (fault === 'down' || (fault === 'loseWrites' && decision !== 'absent')) {
        expectUnavailable(step, got.error, 'claim');
      } else if (expectClaimOutcome(step, decision, got, 'claim')) {
        const record = model.acquire(key, digestOf(d), now, rows, undefined);
        const claim = (got.value as Extract<ClaimOutcome, { claim: Claim }>).claim;
        check(step, claim.attempt === record.attempt, () => `claim: attempt ${claim.attempt}, model ${record.attempt}`);
        held.push({ key, owner: record.owner, claim, version: record.version });
      } else if (got.value?.kind === 'duplicate') {
        const stored = model.records.get(key)!.result;
        check(
          step,
          JSON.stringify(got.value.record.result) === JSON.stringify(stored),
          () => `duplicate: result ${JSON.stringify(got.value)} vs model ${JSON.stringify(stored)}`,
        );
      }
    } else if (r < 0.3) {
      // commit: marker completed with local rows, one transaction
      const key = pick(KEYS);
      const d = chance(0.8) ? 'A' : 'B';
      const rows = randomRows();
      const result = { committed: step };
      const fault = faultFor(['loseNext', 'loseWrites', 'down']);
      trace.push(`${step}: commit ${key} ${d} rows=[${[...rows.keys()]}] fault=${fault} t=${now}`);
      const decision = model.decide(key, digestOf(d), now);
      const got = await underFault(fault, () => store.commit(keyOf(key), digestOf(d), result, effectsOf(rows)));
      if (fault === 'down' || (fault === 'loseWrites' && decision !== 'absent')) {
        expectUnavailable(step, got.error, 'commit');
      } else {
        const asClaim =
          got.value?.kind === 'committed'
            ? { value: { kind: got.value.takeover ? 'reclaimed' : 'claimed' } as ClaimOutcome }
            : (got as { value?: ClaimOutcome; error?: unknown });
        if (expectClaimOutcome(step, decision, asClaim, 'commit')) model.acquire(key, digestOf(d), now, rows, { result });
      }
    } else if (r < 0.42 && held.length > 0) {
      // complete a held claim (current or stale), with more local rows
      const h = pick(held);
      const rows = chance(0.5) ? randomRows() : new Map<string, number>();
      const result = { completed: step, by: h.claim.attempt };
      const fault = faultFor(['loseNext', 'down']);
      trace.push(`${step}: complete ${h.key} attempt=${h.claim.attempt} rows=[${[...rows.keys()]}] fault=${fault} t=${now}`);
      const got = await underFault(fault, () => store.complete(h.claim, result, effectsOf(rows)));
      if (fault === 'down') expectUnavailable(step, got.error, 'complete');
      else if (model.owns(h.key, h.version)) {
        check(step, got.error === undefined, () => `complete by the owner failed: ${show(got.error)}`);
        model.complete(h.key, now, result, rows);
        h.version = 0; // complete returns no new claim: this one's ETag is now stale
      } else if (model.alreadyWritten(h.key, h.owner, 'COMPLETED', 0, result, h.claim.localRows, rows)) {
        check(step, got.error === undefined, () => `a repeated completion by its owner should succeed, got ${show(got.error)}`);
      } else check(step, got.error instanceof LeaseLostError, () => `complete by a stale claim: expected LeaseLostError, got ${show(got.error ?? 'success')}`);
    } else if (r < 0.48 && held.length > 0) {
      const h = pick(held);
      const fault = faultFor(['loseNext', 'down']);
      trace.push(`${step}: release ${h.key} attempt=${h.claim.attempt} fault=${fault} t=${now}`);
      const got = await underFault(fault, () => store.release(h.claim, 'model release'));
      if (fault === 'down') expectUnavailable(step, got.error, 'release');
      else if (model.owns(h.key, h.version)) {
        check(step, got.error === undefined, () => `release by the owner failed: ${show(got.error)}`);
        model.release(h.key, now);
        h.version = 0; // likewise for release
      } else if (model.alreadyWritten(h.key, h.owner, 'RELEASED', 0, undefined, h.claim.localRows)) {
        check(step, got.error === undefined, () => `a repeated release by its owner should succeed, got ${show(got.error)}`);
      } else check(step, got.error instanceof LeaseLostError, () => `release by a stale claim: expected LeaseLostError, got ${show(got.error ?? 'success')}`);
    } else if (r < 0.53 && held.length > 0) {
      const h = pick(held);
      const fault = faultFor(['loseNext', 'down']);
      trace.push(`${step}: renew ${h.key} attempt=${h.claim.attempt} fault=${fault} t=${now}`);
      const got = await underFault(fault, () => store.renewLease(h.claim));
      if (fault === 'down') expectUnavailable(step, got.error, 'renew');
      else if (model.owns(h.key, h.version)) {
        check(step, got.error === undefined, () => `renew by the owner failed: ${show(got.error)}`);
        h.claim = got.value!;
        h.version = model.renew(h.key, now).version;
      } else if (model.alreadyWritten(h.key, h.owner, 'IN_PROGRESS', now + MODEL_LEASE_MS, undefined, h.claim.localRows)) {
        check(step, got.error === undefined, () => `a repeated renewal by its owner should succeed, got ${show(got.error)}`);
        h.claim = got.value!;
        h.version = model.records.get(h.key)!.version;
      } else check(step, got.error instanceof LeaseLostError, () => `renew by a stale claim: expected LeaseLostError, got ${show(got.error ?? 'success')}`);
    } else if (r < 0.65) {
      // makeIdempotent: the work succeeds, throws, or returns a result too large to store; the observer may throw
      const key = pick(KEYS);
      const d = chance(0.8) ? 'A' : 'B';
      const behaviour = pick(['ok', 'ok', 'throws', 'tooBig'] as const);
      const observerThrows = chance(0.5);
      trace.push(`${step}: makeIdempotent ${key} ${d} work=${behaviour} observerThrows=${observerThrows} t=${now}`);
      const decision = model.decide(key, digestOf(d), now);
      const value = behaviour === 'tooBig' ? 'x'.repeat(MAX_RESULT_BYTES + 1) : { ran: step };
      const run = makeIdempotent(
        async (_input: { key: string; d: string }) => {
          if (behaviour === 'throws') throw new Error('work failed');
          return value;
        },
        {
          store,
          keyOf: (input) => keyOf(input.key),
          payloadOf: (input) => ({ d: input.d }),
          observer: () => {
            if (observerThrows) throw new Error('observer broke');
          },
        },
      );
      const got = await underFault('none', () => run({ key, d }));
      const expectError = (type: abstract new (...args: never[]) => Error, what: string) =>
        check(step, got.error instanceof type, () => `makeIdempotent (${decision}): expected ${what}, got ${show(got.error ?? got.value)}`);
      if (decision === 'unknownStatus') expectError(UnknownRecordStatusError, 'UnknownRecordStatusError');
      else if (decision === 'keyReused') expectError(KeyReusedError, 'KeyReusedError');
      else if (decision === 'inProgress') expectError(KeyInProgressError, 'KeyInProgressError');
      else if (decision === 'duplicate') {
        const stored = model.records.get(key)!.result;
        check(
          step,
          JSON.stringify(got.value) === JSON.stringify(stored),
          () => `makeIdempotent duplicate: ${show(got.error ?? got.value)} vs model ${JSON.stringify(stored)}`,
        );
      } else {
        model.acquire(key, digestOf(d), now, new Map(), undefined);
        if (behaviour === 'ok') {
          check(
            step,
            got.error === undefined && JSON.stringify(got.value) === JSON.stringify(value),
            () => `makeIdempotent: expected the work's result, got ${show(got.error ?? got.value)}`,
          );
          model.complete(key, now, value, new Map());
        } else {
          expectError(behaviour === 'tooBig' ? ResultTooLargeError : Error, behaviour === 'tooBig' ? 'ResultTooLargeError' : "the work's error");
          model.release(key, now);
        }
      }
    } else if (r < 0.8) {
      // the clock jumps: a little, to or past a lease, to or past retention
      const records = [...model.records.values()];
      const jump = pick(['small', 'halfLease', 'pastLease', 'pastRetention', 'toLeaseEnd', 'toRetentionEnd'] as const);
      const target =
        jump === 'small'
          ? now + 1_000
          : jump === 'halfLease'
            ? now + MODEL_LEASE_MS / 2
            : jump === 'pastLease'
              ? now + MODEL_LEASE_MS + 1
              : jump === 'pastRetention'
                ? now + MODEL_RETENTION_MS + 1
                : jump === 'toLeaseEnd'
                  ? Math.max(now, ...records.map((rec) => rec.leaseExpiresAtMs))
                  : Math.max(now, Math.min(...records.map((rec) => rec.retentionExpiresAtMs), now + MODEL_RETENTION_MS));
      clock.now = target;
      trace.push(`${step}: clock ${jump} -> t=${target}`);
      continue; // nothing stored changed
    } else if (r < 0.92) {
      const fault = faultFor(['loseNext', 'down']);
      trace.push(`${step}: sweep fault=${fault} t=${now}`);
      const got = await underFault(fault, () => sweeper.sweep());
      if (fault === 'down') expectUnavailable(step, got.error, 'sweep');
      else {
        check(step, got.error === undefined, () => `sweep failed: ${show(got.error)}`);
        const deleted = model.sweep(now);
        if (fault === 'none') check(step, got.value!.deleted === deleted, () => `sweep deleted ${got.value!.deleted}, model ${deleted}`);
      }
    } else if (model.records.size > 0) {
      // an operator, or a newer version, writes a status this version does not know
      const key = pick([...model.records.keys()]);
      trace.push(`${step}: editStatus ${key} -> ARCHIVED t=${now}`);
      const { partitionKey, rowKey } = store.addressOf(keyOf(key));
      await client.updateEntity({ partitionKey, rowKey, status: 'ARCHIVED' }, 'Merge');
      model.editStatus(key, 'ARCHIVED');
    } else continue;
    await compareTable(step, client, store, model, fail);
  }
  return steps;
}

/** The whole table against the model: every record's fields, and exactly its local rows. */
async function compareTable(
  step: number,
  client: TableClient,
  store: TableIdempotencyStore,
  model: RecordModel,
  fail: (step: number, message: string) => never,
): Promise<void> {
  const rows = new Map<string, Record<string, unknown>>();
  for await (const entity of client.listEntities<Record<string, unknown>>()) {
    if (entity.partitionKey === 'sweep-state') continue;
    rows.set(`${entity.partitionKey}/${entity.rowKey}`, entity);
  }
  for (const key of KEYS) {
    const { partitionKey, rowKey } = store.addressOf(keyOf(key));
    const marker = rows.get(`${partitionKey}/${rowKey}`);
    rows.delete(`${partitionKey}/${rowKey}`);
    const record = model.records.get(key);
    if (!record) {
      if (marker) fail(step, `${key}: the model has no record, the table has one (${String(marker.status)}, attempt ${num(marker.attempt)})`);
      continue;
    }
    if (!marker) fail(step, `${key}: the model has a ${record.status} record, the table none`);
    const stored = {
      status: marker.status,
      digest: marker.digest,
      attempt: num(marker.attempt),
      leaseExpiresAtMs: num(marker.leaseExpiresAtMs),
      retentionExpiresAtMs: num(marker.retentionExpiresAtMs),
      createdAtMs: num(marker.createdAtMs),
      result: marker.resultJson === undefined ? undefined : JSON.parse(String(marker.resultJson)),
    };
    const expected = {
      status: record.status,
      digest: record.digest,
      attempt: record.attempt,
      leaseExpiresAtMs: record.leaseExpiresAtMs,
      retentionExpiresAtMs: record.retentionExpiresAtMs,
      createdAtMs: record.createdAtMs,
      result: record.status === 'COMPLETED' ? record.result : stored.result,
    };
    if (JSON.stringify(stored) !== JSON.stringify(expected)) fail(step, `${key}: table ${JSON.stringify(stored)}\n    model ${JSON.stringify(expected)}`);
    for (const [name, v] of record.rows) {
      const row = rows.get(`${partitionKey}/${rowKey}~${name}`);
      if (!row) fail(step, `${key}: local row ${name} is missing`);
      if (num(row.v) !== v) fail(step, `${key}: local row ${name} has v=${num(row.v)}, model ${v}`);
      rows.delete(`${partitionKey}/${rowKey}~${name}`);
    }
  }
  if (rows.size > 0)
    fail(
      step,
      `rows the model does not have (left behind): ${[...rows.values()].map((row) => `${String(row.rowKey).slice(0, 8)}…${String(row.rowKey).slice(64)} kind=${String(row.kind)}`).join(', ')}`,
    );
}

function num(value: unknown): number {
  if (value && typeof value === 'object' && 'value' in value) return Number(value.value);
  return Number(value);
}

function show(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message.split('\n')[0]}`;
  return JSON.stringify(value)?.slice(0, 200) ?? String(value);
}

describe('model-based: the store, the sweep and makeIdempotent against a reference model', () => {
  test('seeded random sequences (claims, commits with local rows, completions, releases, renewals, clock jumps, sweeps, lost answers, outages) agree with the model after every step', async () => {
    const started = Date.now();
    let steps = 0;
    let runs = 0;
    for (let run = 0; run < RUNS && (run === 0 || Date.now() - started < TIME_BOUND_MS); run++) {
      steps += await runSequence(BASE_SEED + run, STEPS);
      runs++;
    }
    expect(runs).toBeGreaterThan(0);
    expect(steps).toBe(runs * STEPS);
  }, 180_000);
});
