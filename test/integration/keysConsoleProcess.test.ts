import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { payloadDigest } from 'azure-functions-idempotency';
import { TableIdempotencyStore } from 'azure-functions-idempotency/table';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator } from '../support/cosmos';
import { freshTable } from '../support/tables';

/**
 * The console as an operator runs it: the package's `bin` (`bin/azure-functions-idempotency.js`, which runs the compiled
 * `dist/operator/cli/main.js` built by jest's global setup) in its own process, against Azurite and the Cosmos stand-in on loopback ports, real time. Its stdout, stderr
 * and exit code are what a shell sees.
 */
const PACKAGE = join(__dirname, '..', '..', 'packages', 'idempotency');
const BIN = join(PACKAGE, 'bin', 'azure-functions-idempotency.js');
const COMPILED = join(PACKAGE, 'dist', 'operator', 'cli', 'main.js');
const azuriteOf = useAzurite();

async function console_(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', USER: 'ci-operator', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the bin, as a process', () => {
  test("package.json's bin is the file that runs the compiled CLI (it exists before any build: npm links it in a fresh clone), both with their shebang", () => {
    const pkg = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(pkg.bin).toEqual({ 'azure-functions-idempotency': 'bin/azure-functions-idempotency.js' });
    expect(readFileSync(BIN, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(readFileSync(BIN, 'utf8')).toContain("join(__dirname, '..', 'dist', 'operator', 'cli', 'main.js')");
    expect(readFileSync(COMPILED, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  test('Table (settings from the environment): show, list, release with who and why, then the exit codes of bad input', async () => {
    const client = await freshTable(azuriteOf(), 'proc');
    const store = new TableIdempotencyStore(client, { leaseMs: 1000, retentionMs: 86_400_000 });
    const key = { consumer: 'payments', key: 'pay-proc-1' };
    const outcome = await store.claim(key, payloadDigest({ paymentId: 'pay-proc-1', card: 'SECRET' }));
    expect(outcome.kind).toBe('claimed');
    await new Promise((resolve) => setTimeout(resolve, 1100)); // its lease lapses (real time: a process of its own)
    const env = { IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString, IDEMPOTENCY_TABLE_NAME: client.tableName };

    const show = await console_(['keys', 'show', 'payments', 'pay-proc-1'], env);
    expect([show.code, show.stdout]).toEqual([0, expect.stringMatching(/status\s+IN_PROGRESS \(lapsed\)/)]);
    const list = await console_(['keys', 'list', 'payments', '--status', 'lapsed', '--json'], env);
    expect(JSON.parse(list.stdout).records.map((r: { key: string }) => r.key)).toEqual(['pay-proc-1']);
    const release = await console_(['keys', 'release', 'payments', 'pay-proc-1', '--reason', 'worker died'], env);
    expect([release.code, release.stdout]).toEqual([0, expect.stringContaining('released payments key "pay-proc-1"')]);
    expect(
      JSON.parse(
        release.stderr
          .split('\n')
          .find((line) => line.startsWith('audit '))!
          .slice(6),
      ),
    ).toMatchObject({ by: 'ci-operator', reason: 'worker died' });
    expect((await store.get(key))!.lastError).toMatch(/^released by operator ci-operator at \S+: worker died$/);

    expect((await console_(['keys', 'wipe', 'payments'], env)).code).toBe(2);
    expect((await console_(['keys', 'show', 'payment', 'pay-proc-1'], env)).stderr).toContain('unknown consumer "payment"');
    expect((await console_(['keys', 'show', 'payment', 'pay-proc-1'], env)).code).toBe(3);
    const help = await console_(['--help']);
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining('Exit codes: 0 done')]);
    expect(`${show.stdout}${list.stdout}${release.stdout}${release.stderr}`).not.toContain('SECRET');
  });

  test('Cosmos (options): show over the network from another process', async () => {
    const cosmos = await CosmosEmulator.start();
    try {
      const container = await cosmos.freshIdempotencyContainer();
      const { CosmosIdempotencyStore } = await import('azure-functions-idempotency/cosmos');
      const store = new CosmosIdempotencyStore(container, { retentionMs: 86_400_000 });
      await store.commit({ consumer: 'orders', key: 'o-1' }, payloadDigest({ orderId: 'o-1' }), { ok: true });
      const args = ['--store', 'cosmos', '--cosmos-endpoint', cosmos.endpoint, '--cosmos-key', Buffer.from('emulator').toString('base64')];
      const show = await console_(['keys', 'show', 'orders', 'o-1', ...args, '--cosmos-database', container.database.id, '--cosmos-container', container.id]);
      expect([show.code, show.stdout]).toEqual([0, expect.stringMatching(/status\s+COMPLETED \(completed\)[\s\S]*result\s+11 bytes stored/)]);
      const missing = await console_(['keys', 'show', 'orders', 'o-1', ...args]);
      expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('--cosmos-database')]);
    } finally {
      await cosmos.stop();
    }
  });
});
