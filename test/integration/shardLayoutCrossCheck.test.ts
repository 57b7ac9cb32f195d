/**
 * A new shard's empty table is protected too (issue 52, docs/DESIGN.md "The refusal"), on two Azurites (two shards'
 * accounts): after a change 1 -> 2 made without the migration, shard 1's table is empty, so its own check finds
 * nothing; with the map (`PAYMENT_SHARD_TABLE_ENDPOINTS`) its gate then samples shard 0's table for live payment
 * records shard 1 owns, finds them, and refuses (naming the key and the shard that holds it). Once
 * `npm run payments:reshard` has moved them, the next check lets it go on. A shard whose own table holds records makes
 * no cross request; without the map nothing can be read across (the runbook's plan is the check).
 */
import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyFromMessageId, TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { paymentsLayoutGate } from '../../src/app/paymentsFunctions';
import { LAYOUT_RECHECK_MS, ShardLayoutRefusedError } from '../../src/app/shardLayoutGate';
import { loadSettings } from '../../src/config/settings';
import { shardOf } from '../../src/payments/shards';
import { runPaymentsReshard } from '../../tools/operator/paymentsReshard';
import { AzuriteTable } from '../support/azurite';
import { inMemoryTelemetry } from '../support/telemetry';

let azurites: AzuriteTable[];
beforeAll(async () => {
  azurites = await Promise.all([AzuriteTable.start(), AzuriteTable.start()]);
});
afterAll(async () => {
  for (const azurite of azurites ?? []) await azurite.stop();
});

const PAYMENTS = Array.from({ length: 20 }, (_, i) => `pay-${i}`);

/** A fresh table name (the same on both accounts), each account's client and store of it. */
function tables() {
  const name = `cross${randomUUID().replace(/-/g, '').slice(0, 10)}`;
  const client = (shard: number) => TableClient.fromConnectionString(azurites[shard].connectionString, name, { allowInsecureConnection: true });
  const store = (shard: number) => new TableIdempotencyStore(client(shard), { retentionMs: 86_400_000 });
  return { name, client, store };
}

async function seed(store: TableIdempotencyStore, ids: readonly string[]): Promise<void> {
  await store.ensureTable();
  for (const id of ids) {
    const claim = await store.claim(keyFromMessageId('payments', id), 'digest');
    if (claim.kind === 'claimed') await store.complete(claim.claim, { status: 'succeeded' });
  }
}

/** Shard 1 of 2's gate, with or without the map, on a settable clock. */
function shardOneGate(name: string, map: boolean) {
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azurites[1].connectionString,
    IDEMPOTENCY_TABLE_NAME: name,
    PAYMENT_SHARD_COUNT: '2',
    PAYMENT_SHARD_INDEX: '1',
    PAYMENTS_QUEUE_NAME: 'payments-1',
    ...(map ? { PAYMENT_SHARD_TABLE_ENDPOINTS: azurites.map((a) => `http://127.0.0.1:${a.port}/devstoreaccount1`).join(',') } : {}),
  });
  let offsetMs = 0;
  const clock = { nowMs: () => Date.now() + offsetMs };
  const own = TableClient.fromConnectionString(azurites[1].connectionString, name, { allowInsecureConnection: true });
  const gate = paymentsLayoutGate(settings, () => own, { clock })!;
  return { gate, later: () => (offsetMs += LAYOUT_RECHECK_MS + 1) };
}

describe("the layout gate of a new shard reads the other shards' tables while its own is empty (two Azurites)", () => {
  test('1 -> 2 without the migration: shard 1 (empty) refuses, naming a payment it owns on shard 0; after payments:reshard it goes on', async () => {
    const t = tables();
    await seed(t.store(0), PAYMENTS); // N was 1: every payment on shard 0
    await t.client(1).createTable();
    const { gate, later } = shardOneGate(t.name, true);
    const { telemetry, logs } = inMemoryTelemetry();
    const refusal = await gate(telemetry).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ShardLayoutRefusedError);
    const strays = (refusal as ShardLayoutRefusedError).strays;
    expect(strays.length).toBeGreaterThan(0);
    for (const stray of strays) expect(stray).toMatchObject({ owner: 1, foundOn: 0 });
    expect(strays.every((s) => shardOf(s.paymentId, 2) === 1)).toBe(true);
    expect((refusal as Error).message).toMatch(/payment pay-\d+ \(COMPLETED\) is in the table of shard 0, but belongs to shard 1 of 2 \(this shard\)/);
    expect(logs().some((l) => l.attributes.outcome === 'layout-refused' && l.attributes.foundOnShard === 0)).toBe(true);

    const dir = mkdtempSync(join(tmpdir(), 'cross-'));
    const file = join(dir, 'tables.json');
    writeFileSync(file, JSON.stringify({ tables: [0, 1].map((shard) => ({ shard, connection: azurites[shard].connectionString, tableName: t.name })) }));
    const printed: string[] = [];
    expect(
      await runPaymentsReshard(
        ['--tables', file, '--from', '1', '--to', '2', '--apply'],
        { IDEMPOTENCY_TABLE_CONNECTION_STRING: azurites[0].connectionString },
        (l) => printed.push(l),
      ),
    ).toBe(0);
    await expect(gate(telemetry)).rejects.toBeInstanceOf(ShardLayoutRefusedError); // the refusal stands until the recheck interval
    later();
    await expect(gate(telemetry)).resolves.toBeUndefined();
  });

  test('a migrated layout passes: an empty new shard finds nothing of its own on shard 0', async () => {
    const t = tables();
    await seed(
      t.store(0),
      PAYMENTS.filter((id) => shardOf(id, 2) === 0),
    );
    await t.client(1).createTable();
    const { telemetry } = inMemoryTelemetry();
    await expect(shardOneGate(t.name, true).gate(telemetry)).resolves.toBeUndefined();
  });

  test('a shard whose own table holds live payment records (all its own) reads no other table', async () => {
    const t = tables();
    await seed(t.store(0), PAYMENTS); // what a cross read would refuse on
    await seed(t.store(1), PAYMENTS.filter((id) => shardOf(id, 2) === 1).slice(0, 2));
    const { telemetry } = inMemoryTelemetry();
    await expect(shardOneGate(t.name, true).gate(telemetry)).resolves.toBeUndefined();
  });

  test('without the map an empty shard cannot read across: it passes (the runbook plan under the new N is the check)', async () => {
    const t = tables();
    await seed(t.store(0), PAYMENTS);
    await t.client(1).createTable();
    const { telemetry } = inMemoryTelemetry();
    await expect(shardOneGate(t.name, false).gate(telemetry)).resolves.toBeUndefined();
  });
});
