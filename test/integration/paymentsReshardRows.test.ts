/**
 * `npm run payments:reshard` moves the rest of a payment's rows with it (issue 52, after the shard map), on a real
 * Azurite: the webhook's Payment row (`paymentstate`, keyed by paymentId, written by PaymentStateTable in the owner's
 * account) and the HTTP API's `accepted` marker (`http-payments-accepted`, read by the owner's status). The webhook's
 * event-id records (`webhook-payment-provider`) stay where they are: the receiver reads them, whatever N is.
 * Same rules as the records: insert-if-absent, an identical copy is an earlier run's, a different one a conflict
 * (never overwritten), a run cut between a copy and its delete is finished by the next.
 */
import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { PAYMENT_ACCEPTED_CONSUMER } from '../../src/http/paymentsApi';
import { WEBHOOK_CONSUMER } from '../../src/http/paymentWebhook';
import { PaymentStateTable } from '../../src/http/PaymentStateTable';
import type { PaymentEvent } from '../../src/http/paymentEvents';
import { shardOf } from '../../src/payments/shards';
import { runPaymentsReshard } from '../../tools/operator/paymentsReshard';
import { useAzurite } from '../support/azurite';

const azuriteOf = useAzurite();
const PAYMENTS = Array.from({ length: 24 }, (_, i) => `pay-${i}`);
const clock = { nowMs: () => 1_780_000_000_000 };

interface Shards {
  readonly store: (shard: number) => TableIdempotencyStore;
  readonly state: (shard: number) => TableClient;
  readonly file: string;
  readonly env: Record<string, string>;
}

function shards(): Shards {
  const run = randomUUID().replace(/-/g, '').slice(0, 10);
  const conn = azuriteOf().connectionString;
  const table = (name: string) => TableClient.fromConnectionString(conn, name, { allowInsecureConnection: true });
  const names = [0, 1, 2].map((i) => ({ tableName: `rows${run}s${i}`, paymentStateTableName: `state${run}s${i}` }));
  const dir = mkdtempSync(join(tmpdir(), 'reshard-rows-'));
  const file = join(dir, 'tables.json');
  writeFileSync(file, JSON.stringify({ tables: names.map((n, shard) => ({ shard, connection: conn, ...n })) }));
  return {
    store: (shard) => new TableIdempotencyStore(table(names[shard].tableName), { retentionMs: 86_400_000 }),
    state: (shard) => table(names[shard].paymentStateTableName),
    file,
    env: { IDEMPOTENCY_TABLE_CONNECTION_STRING: conn },
  };
}

const eventOf = (paymentId: string, version: number): PaymentEvent => ({
  id: `evt-${paymentId}-${version}`,
  type: version === 1 ? 'charge.succeeded' : 'charge.refunded',
  created: 1_780_000_000,
  data: { paymentId, chargeId: `ch-${paymentId}`, amount: 1250, currency: 'EUR', version, refundedAmount: version === 1 ? 0 : 1250 },
});

/** N = 2: each payment's Payment row (version 2) and accepted marker on its owner; event-id records on shard 0 (the receiver). */
async function seeded(): Promise<Shards> {
  const s = shards();
  for (const shard of [0, 1]) {
    await s.store(shard).ensureTable();
    await s.state(shard).createTable();
  }
  for (const id of PAYMENTS) {
    const owner = shardOf(id, 2);
    await new PaymentStateTable(s.state(owner), clock).apply(eventOf(id, 2));
    await s.store(owner).commit({ consumer: PAYMENT_ACCEPTED_CONSUMER, key: id }, 'digest', { acceptedAt: '2026-12-04T10:00:00.000Z' });
    await s.store(0).commit({ consumer: WEBHOOK_CONSUMER, key: `evt-${id}-2` }, 'digest', { status: 200 });
  }
  return s;
}

/** Every entity of a table (PartitionKey/RowKey -> properties with Edm types, ETag and Timestamp aside). */
async function entitiesOf(client: TableClient): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  try {
    for await (const e of client.listEntities({ disableTypeConversion: true })) {
      const { etag: _e, timestamp: _t, partitionKey, rowKey, ...rest } = e as Record<string, unknown>;
      out.set(`${String(partitionKey)}/${String(rowKey)}`, JSON.stringify(Object.fromEntries(Object.entries(rest).filter(([n]) => !n.startsWith('odata.')))));
    }
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode !== 404) throw error;
  }
  return out;
}

async function run(s: Shards, from: number, to: number, ...args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await runPaymentsReshard(['--tables', s.file, '--from', String(from), '--to', String(to), ...args], s.env, (line) => lines.push(line));
  return { code, out: lines.join('\n') };
}

const moving = PAYMENTS.filter((id) => shardOf(id, 3) !== shardOf(id, 2));

describe("payments:reshard moves the webhook's Payment rows and the accepted markers (Azurite, 2 -> 3)", () => {
  test('plan: counts the Payment rows and accepted markers that stay and move, per shard; writes nothing', async () => {
    const s = await seeded();
    const before = await Promise.all([0, 1].map((i) => entitiesOf(s.state(i))));
    const { code, out } = await run(s, 2, 3);
    expect(code).toBe(0);
    for (const shard of [0, 1]) {
      const mine = PAYMENTS.filter((id) => shardOf(id, 2) === shard);
      const stay = mine.filter((id) => shardOf(id, 3) === shard).length;
      const n = mine.length;
      expect(out).toContain(`${n} Payment rows (paymentstate), ${stay} stay, ${n - stay} move`);
      expect(out).toContain(`${n} accepted markers, ${stay} stay, ${n - stay} move`);
    }
    expect(out).toContain(`total: ${PAYMENTS.length} Payment rows (paymentstate), ${PAYMENTS.length - moving.length} stay, ${moving.length} move`);
    expect(out).toContain('dry run: nothing was written');
    expect(await Promise.all([0, 1].map((i) => entitiesOf(s.state(i))))).toEqual(before);
  });

  test("apply: each Payment row and accepted marker lands on its new owner as it was; the event-id records stay on the receiver; the new owner's version check then refuses an older redelivery", async () => {
    const s = await seeded();
    const before = await Promise.all([0, 1].map((i) => entitiesOf(s.state(i))));
    const webhookBefore = await s.store(0).get({ consumer: WEBHOOK_CONSUMER, key: `evt-${moving[0]}-2` });
    const { code, out } = await run(s, 2, 3, '--apply');
    expect(code).toBe(0);
    expect(out).toContain(`accepted markers: ${moving.length} copied and deleted from the old shard`);
    expect(out).toContain(`webhook Payment rows: ${moving.length} copied and deleted from the old shard`);
    const after = await Promise.all([0, 1, 2].map((i) => entitiesOf(s.state(i))));
    for (const id of PAYMENTS) {
      const [oldShard, newShard] = [shardOf(id, 2), shardOf(id, 3)];
      expect(after[newShard].get(`${id}/payment`)).toBe(before[oldShard].get(`${id}/payment`));
      for (const other of [0, 1, 2].filter((t) => t !== newShard)) expect(after[other].has(`${id}/payment`)).toBe(false);
      const marker = { consumer: PAYMENT_ACCEPTED_CONSUMER, key: id };
      expect((await s.store(newShard).get(marker))?.result).toEqual({ acceptedAt: '2026-12-04T10:00:00.000Z' });
      if (newShard !== oldShard) expect(await s.store(oldShard).get(marker)).toBeUndefined();
    }
    expect(await s.store(0).get({ consumer: WEBHOOK_CONSUMER, key: `evt-${moving[0]}-2` })).toEqual(webhookBefore);
    const late = await new PaymentStateTable(s.state(shardOf(moving[0], 3)), clock).apply(eventOf(moving[0], 1));
    expect(late).toEqual({ kind: 'stale', rowVersion: 2 });
    const again = await run(s, 2, 3);
    expect(again.out).toContain(`total: ${PAYMENTS.length} Payment rows (paymentstate), ${PAYMENTS.length} stay, 0 move`);
    expect(again.out).toContain(`total: ${PAYMENTS.length} accepted markers, ${PAYMENTS.length} stay, 0 move`);
    expect(again.out).toContain('nothing moves');
  });

  test('a different Payment row already on the new owner is a conflict: the run stops naming it and both versions, nothing is overwritten', async () => {
    const s = await seeded();
    const victim = moving.find((id) => shardOf(id, 3) === 2)!;
    await s.state(2).createTable();
    await new PaymentStateTable(s.state(2), clock).apply(eventOf(victim, 1)); // a late redelivery landed there after a switch without the move
    const { code, out } = await run(s, 2, 3, '--apply');
    expect(code).toBe(1);
    expect(out).toContain(`conflict: payment ${victim} moving from shard ${shardOf(victim, 2)} to shard 2`);
    expect(out).toMatch(/Payment row in paymentstate \([^)]*version[^)]*; version 1 there, 2 here\)/);
    expect(out).toContain('stopped:');
    expect(await new PaymentStateTable(s.state(2), clock).get(victim)).toMatchObject({ version: 1 });
    expect(await new PaymentStateTable(s.state(shardOf(victim, 2)), clock).get(victim)).toMatchObject({ version: 2 });
  });

  test('a run cut between the copy of a Payment row and its delete is finished by the next run', async () => {
    const s = await seeded();
    await s.state(2).createTable(); // the hook reads it before the tool would create it
    let cut: string | undefined;
    const rowOf = (shard: number, id: string) => new PaymentStateTable(s.state(shard), clock).get(id);
    // Between a copy and its delete only a Payment row's move leaves the row on both tables (a shard's markers move
    // before its rows): the first such hook dies.
    const afterCopy = async (paymentId: string) => {
      if (cut === undefined && (await rowOf(shardOf(paymentId, 2), paymentId)) && (await rowOf(shardOf(paymentId, 3), paymentId))) {
        cut = paymentId;
        throw new Error('the process died here');
      }
    };
    await expect(runPaymentsReshard(['--tables', s.file, '--from', '2', '--to', '3', '--apply'], s.env, () => undefined, { afterCopy })).rejects.toThrow(
      'the process died here',
    );
    expect(await new PaymentStateTable(s.state(shardOf(cut!, 2)), clock).get(cut!)).toBeDefined();
    const { code, out } = await run(s, 2, 3, '--apply');
    expect(code).toBe(0);
    expect(out).toMatch(/webhook Payment rows: \d+ copied and deleted from the old shard, 1 found already copied/);
    expect(await new PaymentStateTable(s.state(shardOf(cut!, 2)), clock).get(cut!)).toBeUndefined();
    expect(await new PaymentStateTable(s.state(shardOf(cut!, 3)), clock).get(cut!)).toMatchObject({ version: 2 });
  });
});
