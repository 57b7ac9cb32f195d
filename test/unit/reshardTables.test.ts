/**
 * The command line and the tables file of `npm run payments:reshard` (no I/O: a bad file or option is refused before
 * any table is read; the moves themselves: test/integration/paymentsReshard.test.ts on Azurite).
 */
import { loadSettings } from '../../src/config/settings';
import { UsageError } from '../../tools/cli/commandLine';
import { runPaymentsReshard, USAGE } from '../../tools/operator/paymentsReshard';
import { shardTablesOf } from '../../tools/operator/reshard/shardTables';

const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' });
const file = (tables: unknown[]) => JSON.stringify({ tables });
const local = (shard: number) => ({ shard, connection: 'UseDevelopmentStorage=true' });

describe('payments:reshard: the tables file', () => {
  test('every shard of both layouts once, in shard order, each with the settings table name and partition count unless its own', () => {
    const tables = shardTablesOf(
      file([local(1), { shard: 0, endpoint: 'https://stpay0.table.core.windows.net', tableName: 'other', partitionCount: 32 }, local(2)]),
      3,
      settings,
    );
    expect(tables.map((t) => [t.shard, t.partitionCount, t.label])).toEqual([
      [0, 32, 'https://stpay0.table.core.windows.net/other'],
      [1, 16, 'http://127.0.0.1:10002/idempotency'],
      [2, 16, 'http://127.0.0.1:10002/idempotency'],
    ]);
  });

  test.each([
    ['not JSON', '{', /not JSON/],
    ['no tables array', '{"shards": []}', /must be \{ "tables"/],
    ['a shard missing', file([local(0), local(2)]), /missing 1/],
    ['a shard twice', file([local(0), local(0), local(1)]), /shard 0 is listed twice/],
    ['a shard in neither layout', file([local(0), local(1), local(2), local(3)]), /shard 3 is in neither layout/],
    [
      'both connection and endpoint',
      file([{ shard: 0, connection: 'x', endpoint: 'https://a.table.core.windows.net' }, local(1), local(2)]),
      /one of "connection"/,
    ],
    ['a partition count out of range', file([{ ...local(0), partitionCount: 0 }, local(1), local(2)]), /shard 0: partition count/],
  ])('%s is refused, naming it', (_what, text, message) => {
    expect(() => shardTablesOf(text, 3, settings)).toThrow(UsageError);
    expect(() => shardTablesOf(text, 3, settings)).toThrow(message);
  });
});

describe('payments:reshard: the command line', () => {
  test('--help prints the usage, exit 0', async () => {
    const out: string[] = [];
    expect(await runPaymentsReshard(['--help'], {}, (line) => out.push(line))).toBe(0);
    expect(out).toEqual([USAGE]);
  });

  test('--from, --to and --tables are required, --plan and --apply exclude each other: a usage error naming each', async () => {
    await expect(runPaymentsReshard(['--plan', '--apply', '--to', '0'], {})).rejects.toThrow(
      /--to must be an integer from 1 to 64, got "0"; --from is required.*; --tables is required.*; --plan and --apply exclude each other/,
    );
  });
});
