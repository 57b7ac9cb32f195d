/**
 * `npm run payments:reshard` (tools/operator/paymentsReshard.ts) on a real Azurite: three tables of one Azurite stand
 * for three shards' storage accounts. The plan counts per shard what stays and what moves; a record in progress refuses
 * plan and apply (naming the key); apply moves each record with its Payment row (marker and row, Edm types kept) and
 * leaves the orders' records in the same tables untouched; a different record already on the new shard stops the run
 * (nothing overwritten); a run cut between a copy and its delete is finished by the next one.
 */
import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyFromMessageId, payloadDigest, TableIdempotencyStore, tableAddress } from 'azure-functions-idempotency/internal';
import { completeRecord } from '../../src/payments/completeRecord';
import { PAYMENT_ROW, paymentRow } from '../../src/payments/paymentRow';
import type { ChargeResult, PaymentRequested } from '../../src/payments/schema';
import { shardOf } from '../../src/payments/shards';
import { runPaymentsReshard } from '../../tools/operator/paymentsReshard';
import { useAzurite } from '../support/azurite';

const azuriteOf = useAzurite();
const RETENTION_MS = 86_400_000;
const SUCCEEDED: ChargeResult = { status: 'succeeded', chargeId: 'ch_1', amount: 1250, currency: 'EUR' };
const PAYMENTS = Array.from({ length: 30 }, (_, i) => `pay-${i}`);
const ORDERS = ['order-1', 'order-2', 'order-3'];

interface Shards {
  readonly names: string[];
  readonly client: (shard: number) => TableClient;
  readonly store: (shard: number) => TableIdempotencyStore;
  readonly file: string;
  readonly env: Record<string, string>;
}

/** Three shard tables (the third not created: a new shard), and the tables file naming them. */
function shards(): Shards {
  const run = randomUUID().replace(/-/g, '').slice(0, 10);
  const names = [0, 1, 2].map((i) => `reshard${run}s${i}`);
  const client = (shard: number) => TableClient.fromConnectionString(azuriteOf().connectionString, names[shard], { allowInsecureConnection: true });
  const store = (shard: number) => new TableIdempotencyStore(client(shard), { retentionMs: RETENTION_MS });
  const dir = mkdtempSync(join(tmpdir(), 'reshard-'));
  const file = join(dir, 'tables.json');
  writeFileSync(file, JSON.stringify({ tables: names.map((tableName, shard) => ({ shard, connection: azuriteOf().connectionString, tableName })) }));
  return { names, client, store, file, env: { IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString } };
}

const paymentOf = (paymentId: string): PaymentRequested => ({ paymentId, customerId: 'cust-1', amount: 1250, currency: 'EUR' });

/** A payment as the consumer leaves it: claimed with its Payment row pending, completed with the row's outcome (or left in progress). */
async function seedPayment(store: TableIdempotencyStore, paymentId: string, complete = true): Promise<void> {
  const payment = paymentOf(paymentId);
  const outcome = await store.claim(keyFromMessageId('payments', paymentId), payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
  if (outcome.kind !== 'claimed') throw new Error(`seed ${paymentId}: ${outcome.kind}`);
  if (complete) expect(await completeRecord(store, { claim: outcome.claim, result: SUCCEEDED, payment })).toBe('completed');
}

/** The whole table as raw rows (RowKey -> properties with their Edm types, ETag and Timestamp aside). */
async function rowsOf(client: TableClient): Promise<Map<string, string>> {
  const rows = new Map<string, string>();
  try {
    for await (const entity of client.listEntities({ disableTypeConversion: true })) {
      const { etag: _etag, timestamp: _timestamp, partitionKey, rowKey, ...rest } = entity as Record<string, unknown>;
      const body = Object.fromEntries(Object.entries(rest).filter(([name]) => !name.startsWith('odata.')));
      rows.set(String(rowKey), JSON.stringify({ partitionKey, ...body }));
    }
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode !== 404) throw error;
  }
  return rows;
}

/** Shards 0 and 1 of N = 2, each holding its payments (completed, with Payment rows) and the orders' records. */
async function seeded(): Promise<Shards> {
  const s = shards();
  for (const shard of [0, 1]) {
    await s.store(shard).ensureTable();
    for (const id of ORDERS) {
      const claim = await s.store(shard).claim(keyFromMessageId('orders', id), 'digest-of-order');
      if (claim.kind === 'claimed') await s.store(shard).complete(claim.claim, { ok: true });
    }
  }
  for (const id of PAYMENTS) await seedPayment(s.store(shardOf(id, 2)), id);
  return s;
}

async function run(s: Shards, ...args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await runPaymentsReshard(['--tables', s.file, '--from', '2', '--to', '3', ...args], s.env, (line) => lines.push(line));
  return { code, out: lines.join('\n') };
}

describe('payments:reshard on Azurite (2 -> 3 shards)', () => {
  test('plan: per old shard, the payment records that stay and those that move, to which shard; nothing written', async () => {
    const s = await seeded();
    const before = await Promise.all([0, 1, 2].map((i) => rowsOf(s.client(i))));
    const { code, out } = await run(s);
    expect(code).toBe(0);
    for (const shard of [0, 1]) {
      const mine = PAYMENTS.filter((id) => shardOf(id, 2) === shard);
      const stay = mine.filter((id) => shardOf(id, 3) === shard).length;
      const moves = [0, 1, 2].filter((t) => t !== shard).map((t) => [t, mine.filter((id) => shardOf(id, 3) === t).length] as const);
      const to = moves.filter(([, n]) => n > 0).map(([t, n]) => `${n} to shard ${t}`);
      expect(out).toContain(`shard ${shard} `);
      expect(out).toMatch(new RegExp(`shard ${shard} \\S+: ${mine.length} payment records, ${stay} stay, ${mine.length - stay} move \\(${to.join(', ')}\\)`));
    }
    expect(out).toMatch(/shard 2 \[new\] \S+: 0 payment records, 0 stay, 0 move/);
    expect(out).toContain('dry run: nothing was written');
    expect(await Promise.all([0, 1, 2].map((i) => rowsOf(s.client(i))))).toEqual(before);
  });

  test('a record in progress refuses the plan and the apply, naming its key; nothing is written', async () => {
    const s = await seeded();
    await seedPayment(s.store(shardOf('pay-busy', 2)), 'pay-busy', false);
    const before = await Promise.all([0, 1, 2].map((i) => rowsOf(s.client(i))));
    const plan = await run(s, '--plan');
    expect(plan.code).toBe(1);
    expect(plan.out).toContain(`refused: 1 payment record(s) in progress: pay-busy (shard ${shardOf('pay-busy', 2)})`);
    const apply = await run(s, '--apply');
    expect(apply.code).toBe(1);
    expect(apply.out).toContain('refused: 1 payment record(s) in progress: pay-busy');
    expect(await Promise.all([0, 1, 2].map((i) => rowsOf(s.client(i))))).toEqual(before);
  });

  test("apply: each moving record goes to its new shard with its Payment row, as it was; the orders' rows stay untouched; a second plan moves nothing", async () => {
    const s = await seeded();
    const before = await Promise.all([0, 1].map((i) => rowsOf(s.client(i))));
    const { code, out } = await run(s, '--apply');
    expect(code).toBe(0);
    const moving = PAYMENTS.filter((id) => shardOf(id, 3) !== shardOf(id, 2));
    expect(moving.length).toBeGreaterThan(0);
    expect(out).toContain(`applied: ${moving.length} copied and deleted from the old shard, 0 found already copied`);
    const after = await Promise.all([0, 1, 2].map((i) => rowsOf(s.client(i))));
    for (const id of PAYMENTS) {
      const { rowKey } = tableAddress(keyFromMessageId('payments', id), 16);
      const [oldShard, newShard] = [shardOf(id, 2), shardOf(id, 3)];
      // The marker and its Payment row, property for property (Int64 times, Int32 attempt, the row's amount) on the new shard only.
      for (const row of [rowKey, `${rowKey}~${PAYMENT_ROW}`]) {
        expect(after[newShard].get(row)).toBe(before[oldShard].get(row));
        for (const other of [0, 1, 2].filter((t) => t !== newShard)) expect(after[other].has(row)).toBe(false);
      }
      const record = await s.store(newShard).get(keyFromMessageId('payments', id));
      expect(record).toMatchObject({ status: 'COMPLETED', result: SUCCEEDED, localRows: [PAYMENT_ROW] });
    }
    for (const shard of [0, 1])
      for (const id of ORDERS) {
        const { rowKey } = tableAddress(keyFromMessageId('orders', id), 16);
        expect(after[shard].get(rowKey)).toBe(before[shard].get(rowKey));
      }
    const again = await run(s);
    expect(again.code).toBe(0);
    expect(again.out).toContain('total: 30 payment records, 30 stay, 0 move');
  });

  test('a different record already on the new shard is a conflict: the run stops naming it, nothing is overwritten, the record stays on its old shard', async () => {
    const s = await seeded();
    const victim = PAYMENTS.find((id) => shardOf(id, 3) === 2 && shardOf(id, 2) !== 2)!;
    await s.store(2).ensureTable();
    const other = await s.store(2).claim(keyFromMessageId('payments', victim), 'another-digest');
    if (other.kind === 'claimed') await s.store(2).complete(other.claim, { status: 'declined', reason: 'elsewhere' });
    const theirs = await rowsOf(s.client(2));
    const { code, out } = await run(s, '--apply');
    expect(code).toBe(1);
    expect(out).toContain(`conflict: payment ${victim} moving from shard ${shardOf(victim, 2)} to shard 2`);
    expect(out).toMatch(/a different record \([^)]*digest[^)]*\)/);
    const { rowKey } = tableAddress(keyFromMessageId('payments', victim), 16);
    expect((await rowsOf(s.client(2))).get(rowKey)).toBe(theirs.get(rowKey));
    expect((await s.store(shardOf(victim, 2)).get(keyFromMessageId('payments', victim)))?.status).toBe('COMPLETED');
  });

  test('a run cut between a copy and its delete is finished by the next run (the copy found identical, then deleted from the old shard)', async () => {
    const s = await seeded();
    const before = await Promise.all([0, 1].map((i) => rowsOf(s.client(i))));
    let cut: string | undefined;
    const crash = async (paymentId: string) => {
      cut = paymentId;
      throw new Error('the process died here');
    };
    await expect(runPaymentsReshard(['--tables', s.file, '--from', '2', '--to', '3', '--apply'], s.env, () => undefined, { afterCopy: crash })).rejects.toThrow(
      'the process died here',
    );
    const key = keyFromMessageId('payments', cut!);
    expect(await s.store(shardOf(cut!, 2)).get(key)).toBeDefined();
    expect(await s.store(shardOf(cut!, 3)).get(key)).toBeDefined();
    const { code, out } = await run(s, '--apply');
    expect(code).toBe(0);
    const moving = PAYMENTS.filter((id) => shardOf(id, 3) !== shardOf(id, 2)).length;
    expect(out).toContain(`applied: ${moving - 1} copied and deleted from the old shard, 1 found already copied`);
    expect(await s.store(shardOf(cut!, 2)).get(key)).toBeUndefined();
    const { rowKey } = tableAddress(key, 16);
    expect((await rowsOf(s.client(shardOf(cut!, 3)))).get(`${rowKey}~${PAYMENT_ROW}`)).toBe(before[shardOf(cut!, 2)].get(`${rowKey}~${PAYMENT_ROW}`));
    expect((await run(s)).out).toContain('total: 30 payment records, 30 stay, 0 move');
  });

  test('shrinking back (3 -> 2): the retired shard 2 gives every record away, each lands on its owner under 2, as it was before the grow', async () => {
    const s = await seeded();
    const original = await Promise.all([0, 1].map((i) => rowsOf(s.client(i))));
    expect((await run(s, '--apply')).code).toBe(0);
    const lines: string[] = [];
    const code = await runPaymentsReshard(['--tables', s.file, '--from', '3', '--to', '2', '--apply'], s.env, (line) => lines.push(line));
    expect(code).toBe(0);
    const onTwo = PAYMENTS.filter((id) => shardOf(id, 3) === 2).length;
    expect(lines.join('\n')).toMatch(new RegExp(`shard 2 \\[retired\\] \\S+: ${onTwo} payment records, 0 stay, ${onTwo} move`));
    const after = await Promise.all([0, 1, 2].map((i) => rowsOf(s.client(i))));
    expect(after.slice(0, 2)).toEqual(original);
    expect(after[2].size).toBe(0);
  });
});
