import { shardChoiceOf } from '../../tools/operator/keysShard';
import { shardOf } from '../../src/payments/shards';

/** Which shard's table `npm run keys` reads (tools/operator/keysShard.ts): issue 52 item 2. */
const OWN = 'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;';
const MAP = 'http://127.0.0.1:10002/devstoreaccount1,http://127.0.0.1:10012/devstoreaccount1,http://127.0.0.1:10022/devstoreaccount1';
const env = (extra: Record<string, string> = {}) => ({
  IDEMPOTENCY_TABLE_CONNECTION_STRING: OWN,
  PAYMENT_SHARD_COUNT: '3',
  PAYMENT_SHARD_INDEX: '0',
  PAYMENTS_QUEUE_NAME: 'payments-0',
  PAYMENT_SHARD_TABLE_ENDPOINTS: MAP,
  ...extra,
});
const ownedBy = (shard: number): string => {
  for (let i = 0; ; i++) if (shardOf(`pay-${i}`, 3) === shard) return `pay-${i}`;
};

describe('npm run keys: the shard a command reads', () => {
  test('one shard (or no shard settings): untouched', () => {
    expect(shardChoiceOf(['keys', 'show', 'payments', 'pay-1'], {}, undefined)).toEqual({ kind: 'unsharded' });
  });

  test("a payment key goes to its owner (options and their values skipped), its connection string's TableEndpoint replaced", () => {
    const id = ownedBy(2);
    const choice = shardChoiceOf(['--json', 'keys', '--timeout-ms', '900', 'evict', 'payments', id, '--reason', 'x'], env(), undefined);
    expect(choice).toMatchObject({
      kind: 'shard',
      shard: 2,
      remote: true,
      note: `shard 2 of 3: the owner of payment ${id}, its table at http://127.0.0.1:10022/devstoreaccount1`,
    });
    if (choice.kind !== 'shard') throw new Error(choice.kind);
    expect(choice.env.IDEMPOTENCY_TABLE_CONNECTION_STRING).toBe(OWN.replace('10002', '10022'));
    expect(shardChoiceOf(['keys', 'show', 'http-payments-accepted', '--', id], env(), undefined)).toMatchObject({ shard: 2 });
    // Another consumer's key is not a payment id: the settings' own shard.
    expect(shardChoiceOf(['keys', 'show', 'orders', id], env(), undefined)).toMatchObject({ shard: 0, remote: false });
  });

  test('dlq replay <base>-<i> goes to shard i; keys list to the settings own shard, or --shard', () => {
    expect(shardChoiceOf(['dlq', 'replay', 'payments-1', '--consumer', 'payments'], env(), undefined)).toMatchObject({ shard: 1, remote: true });
    expect(shardChoiceOf(['dlq', 'replay', 'orders', '--consumer', 'orders'], env(), undefined)).toMatchObject({ shard: 0, remote: false });
    expect(shardChoiceOf(['keys', 'list', 'payments'], env(), undefined)).toMatchObject({ shard: 0, remote: false });
    expect(shardChoiceOf(['keys', 'list', 'payments'], env(), '2')).toMatchObject({ shard: 2, remote: true });
    expect(shardChoiceOf(['keys', 'list', 'payments'], env(), '3')).toMatchObject({ kind: 'refused', message: '--shard 3: a shard of 3 is 0 to 2' });
  });

  test('refused: another shard without the map, or with the table named on the command line; Azure settings point the endpoint', () => {
    const id = ownedBy(1);
    expect(shardChoiceOf(['keys', 'show', 'payments', id], env({ PAYMENT_SHARD_TABLE_ENDPOINTS: '' }), undefined)).toMatchObject({
      kind: 'refused',
      message: expect.stringMatching(/no PAYMENT_SHARD_TABLE_ENDPOINTS: use shard 1's settings/),
    });
    expect(shardChoiceOf(['keys', 'show', 'payments', id, '--table-endpoint', 'https://x'], env(), undefined)).toMatchObject({ kind: 'refused' });
    const azure = env({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: '',
      PAYMENT_SHARD_TABLE_ENDPOINTS: 'https://a.table.core.windows.net/,https://b.table.core.windows.net/,https://c.table.core.windows.net/',
    });
    const choice = shardChoiceOf(['keys', 'show', 'payments', id], { ...azure, IDEMPOTENCY_TABLE_CONNECTION_STRING: undefined }, undefined);
    expect(choice).toMatchObject({ kind: 'shard', shard: 1, env: { IDEMPOTENCY_TABLE_ENDPOINT: 'https://b.table.core.windows.net/' } });
  });
});
