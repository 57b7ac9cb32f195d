/**
 * The ledger check's own rows (src/payments/ledgerRows.ts) on a table client stub, edge by edge (test/integration/ledgerCheck.test.ts
 * holds them on Azurite): what a checkpoint row reads back as (a cursor left empty, undecided charges that do not read
 * as one dropped, a row that is not a checkpoint), the conditional checkpoint write, a discrepancy's detail bounded, the
 * listing's limit, and what a missing row or table answers.
 */
import type { TableClient } from '@azure/data-tables';
import { StoreUnavailableError } from 'azure-functions-idempotency';
import {
  LEDGER_CHECK_PARTITION,
  listDiscrepancies,
  readLedgerCheckpoint,
  recordDiscrepancy,
  removeDiscrepancy,
  writeLedgerCheckpoint,
} from '../../src/payments/ledgerRows';
import type { PendingCharge } from '../../src/payments/ledgerCheck';

const restError = (statusCode: number, code = '') => Object.assign(new Error(`status ${statusCode}`), { name: 'RestError', statusCode, code });

/** A client whose calls answer with `answer` (an Error is thrown), recording what each was asked. */
function clientOf(answer: (method: string, args: unknown[]) => unknown) {
  const calls: Array<[string, unknown[]]> = [];
  const call =
    (method: string) =>
    async (...args: unknown[]) => {
      calls.push([method, args]);
      const result = answer(method, args);
      if (result instanceof Error) throw result;
      return result;
    };
  const client = {
    getEntity: call('getEntity'),
    createEntity: call('createEntity'),
    updateEntity: call('updateEntity'),
    deleteEntity: call('deleteEntity'),
    listEntities: (...args: unknown[]) => {
      calls.push(['listEntities', args]);
      const rows = answer('listEntities', args);
      return (async function* () {
        if (rows instanceof Error) throw rows;
        yield* rows as unknown[];
      })();
    },
  } as unknown as TableClient;
  return { client, calls };
}

const pending: PendingCharge = { id: 'ch_1', paymentId: 'pay-1', createdMs: 1_000, why: 'record-in-progress' };

describe('readLedgerCheckpoint', () => {
  test('the row read back: window start, cursor, the undecided charges, its ETag', async () => {
    const row = { fromMs: BigInt(5_000), cursor: 'c-7', pending: JSON.stringify([pending, { ...pending, id: 'ch_2', why: 'charge-pending' }]), etag: 'W/"1"' };
    const { client, calls } = clientOf(() => row);
    expect(await readLedgerCheckpoint(client, 1_000)).toEqual({
      checkpoint: { fromMs: 5_000, cursor: 'c-7', pending: [pending, { ...pending, id: 'ch_2', why: 'charge-pending' }] },
      etag: 'W/"1"',
    });
    expect(calls[0][1].slice(0, 2)).toEqual([LEDGER_CHECK_PARTITION, 'checkpoint']);
  });

  test('an empty cursor is no cursor; an empty or unreadable list of undecided charges is none', async () => {
    for (const pendingText of ['', 'not json', '{"id":"ch_1"}', undefined]) {
      const { client } = clientOf(() => ({ fromMs: BigInt(5_000), cursor: '', pending: pendingText, etag: 'e' }));
      expect(await readLedgerCheckpoint(client, 1_000)).toEqual({ checkpoint: { fromMs: 5_000, pending: [] }, etag: 'e' });
    }
  });

  test('undecided charges that do not read as one are dropped, the others kept', async () => {
    const bad = [
      'ch_x',
      null,
      { ...pending, id: 7 },
      { ...pending, paymentId: undefined },
      { ...pending, createdMs: 'soon' },
      { ...pending, createdMs: null },
      { ...pending, why: 'other' },
    ];
    const { client } = clientOf(() => ({ fromMs: BigInt(5_000), cursor: 'c', pending: JSON.stringify([...bad, pending]), etag: 'e' }));
    expect((await readLedgerCheckpoint(client, 1_000)).checkpoint?.pending).toEqual([pending]);
  });

  test('a row without a window start is no checkpoint; no row or no table yet: none, no ETag', async () => {
    const { client } = clientOf(() => ({ fromMs: 'x', cursor: 'c', pending: '[]', etag: 'e' }));
    expect(await readLedgerCheckpoint(client, 1_000)).toEqual({ checkpoint: undefined, etag: 'e' });
    const notText = clientOf(() => ({ fromMs: BigInt(5_000), cursor: 7, pending: '[]', etag: 'e' }));
    expect(await readLedgerCheckpoint(notText.client, 1_000)).toEqual({ checkpoint: { fromMs: 5_000, pending: [] }, etag: 'e' });
    const missing = clientOf(() => restError(404, 'ResourceNotFound'));
    expect(await readLedgerCheckpoint(missing.client, 1_000)).toEqual({ checkpoint: undefined, etag: undefined });
  });

  test('a store that does not answer: StoreUnavailableError naming the read', async () => {
    const { client } = clientOf(() => restError(503, 'ServerBusy'));
    const error = await readLedgerCheckpoint(client, 1_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain('ledgerCheck.readCheckpoint');
  });
});

describe('writeLedgerCheckpoint', () => {
  const checkpoint = { fromMs: 5_000.7, pending: [pending] };

  test('no row read: inserted (no cursor written as empty); a row read: replaced on its ETag', async () => {
    const { client, calls } = clientOf(() => undefined);
    expect(await writeLedgerCheckpoint(client, undefined, checkpoint, 9_000.4, 1_000)).toBe(true);
    expect(await writeLedgerCheckpoint(client, 'W/"1"', { ...checkpoint, cursor: 'c-8' }, 9_000, 1_000)).toBe(true);
    const [[insert, [inserted]], [replace, [replaced, mode, options]]] = calls as Array<[string, [Record<string, unknown>, unknown, { etag: string }]]>;
    expect([insert, replace, mode, options.etag]).toEqual(['createEntity', 'updateEntity', 'Replace', 'W/"1"']);
    expect(inserted).toEqual({
      partitionKey: LEDGER_CHECK_PARTITION,
      rowKey: 'checkpoint',
      kind: 'ledger-checkpoint',
      fromMs: { value: '5000', type: 'Int64' },
      cursor: '',
      pending: JSON.stringify([pending]),
      updatedAtMs: { value: '9000', type: 'Int64' },
    });
    expect(replaced).toMatchObject({ cursor: 'c-8' });
  });

  test('another tick moved it first (412, or 409 for a row inserted meanwhile): false, nothing thrown; a store fault is thrown', async () => {
    for (const status of [412, 409]) {
      const { client } = clientOf(() => restError(status));
      expect(await writeLedgerCheckpoint(client, status === 412 ? 'e' : undefined, checkpoint, 9_000, 1_000)).toBe(false);
    }
    const { client } = clientOf(() => restError(503, 'ServerBusy'));
    await expect(writeLedgerCheckpoint(client, 'e', checkpoint, 9_000, 1_000)).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('the discrepancy rows', () => {
  const discrepancy = { paymentId: 'pay/1', chargeId: 'ch_9', createdMs: 4_000.5, reason: 'record-failed' as never, detail: 'd'.repeat(600) };

  test('recorded once under its encoded key, the detail cut to 500 characters; a second report is false', async () => {
    const { client, calls } = clientOf(() => undefined);
    expect(await recordDiscrepancy(client, discrepancy, 9_000, 1_000)).toBe(true);
    expect(calls[0][1][0]).toEqual({
      partitionKey: 'ledger-discrepancy',
      rowKey: 'pay%2F1|ch_9',
      kind: 'ledger-discrepancy',
      paymentId: 'pay/1',
      chargeId: 'ch_9',
      chargeCreatedMs: { value: '4000', type: 'Int64' },
      reason: 'record-failed',
      detail: 'd'.repeat(500),
      foundAtMs: { value: '9000', type: 'Int64' },
    });
    const again = clientOf(() => restError(409, 'EntityAlreadyExists'));
    expect(await recordDiscrepancy(again.client, discrepancy, 9_000, 1_000)).toBe(false);
    const down = clientOf(() => restError(503, 'ServerBusy'));
    await expect(recordDiscrepancy(down.client, discrepancy, 9_000, 1_000)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  test('listed up to the limit (default 1,000); no table yet: none; a store fault is thrown', async () => {
    const row = (i: number) => ({
      paymentId: `pay-${i}`,
      chargeId: `ch_${i}`,
      chargeCreatedMs: BigInt(i),
      reason: 'record-failed',
      detail: 'x',
      foundAtMs: BigInt(9),
    });
    const { client } = clientOf(() => Array.from({ length: 1_001 }, (_, i) => row(i)));
    const all = await listDiscrepancies(client);
    expect(all).toHaveLength(1_000);
    expect(all[0]).toEqual({ paymentId: 'pay-0', chargeId: 'ch_0', createdMs: 0, reason: 'record-failed', detail: 'x', foundAtMs: 9 });
    expect(await listDiscrepancies(client, { limit: 2 })).toHaveLength(2);
    expect(await listDiscrepancies(clientOf(() => restError(404, 'TableNotFound')).client)).toEqual([]);
    await expect(listDiscrepancies(clientOf(() => restError(503, 'ServerBusy')).client)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  test('removed: true; none to remove: false; a store fault is thrown', async () => {
    const { client, calls } = clientOf(() => undefined);
    expect(await removeDiscrepancy(client, 'pay/1', 'ch_9')).toBe(true);
    expect(calls[0][1]).toEqual(['ledger-discrepancy', 'pay%2F1|ch_9']);
    expect(await removeDiscrepancy(clientOf(() => restError(404, 'ResourceNotFound')).client, 'pay/1', 'ch_9')).toBe(false);
    await expect(removeDiscrepancy(clientOf(() => restError(503, 'ServerBusy')).client, 'pay/1', 'ch_9')).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('every call is bounded and named', () => {
  /** A client whose every call waits until its abort signal fires, recording the signals it was given. */
  function hanging() {
    const signals: Array<AbortSignal | undefined> = [];
    const wait = (signal: AbortSignal | undefined) =>
      new Promise((_resolve, reject) => {
        signals.push(signal);
        signal?.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })));
      });
    const options = (args: unknown[]) => args.find((a): a is { abortSignal?: AbortSignal } => typeof a === 'object' && a !== null && 'abortSignal' in a);
    const { client } = clientOf((_method, args) => wait(options(args)?.abortSignal));
    return { client, signals };
  }

  test('a read or a write past its deadline is aborted, and the error names the call', async () => {
    const calls: Array<[string, (client: TableClient) => Promise<unknown>]> = [
      ['ledgerCheck.readCheckpoint', (c) => readLedgerCheckpoint(c, 20)],
      ['ledgerCheck.writeCheckpoint', (c) => writeLedgerCheckpoint(c, undefined, { fromMs: 1, pending: [] }, 2, 20)],
      ['ledgerCheck.writeCheckpoint', (c) => writeLedgerCheckpoint(c, 'e', { fromMs: 1, pending: [] }, 2, 20)],
      [
        'ledgerCheck.recordDiscrepancy',
        (c) => recordDiscrepancy(c, { paymentId: 'p', chargeId: 'c', createdMs: 1, reason: 'record-failed' as never, detail: '' }, 2, 20),
      ],
    ];
    for (const [name, call] of calls) {
      const { client, signals } = hanging();
      const error = await call(client).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toContain(name);
      expect(signals.map((s) => s?.aborted)).toEqual([true]);
    }
  });

  test('a store fault of a write, a listing or a removal names the call', async () => {
    const busy = () => clientOf(() => restError(503, 'ServerBusy')).client;
    const messages = await Promise.all([
      writeLedgerCheckpoint(busy(), 'e', { fromMs: 1, pending: [] }, 2, 1_000).catch((e: Error) => e.message),
      recordDiscrepancy(busy(), { paymentId: 'p', chargeId: 'c', createdMs: 1, reason: 'record-failed' as never, detail: '' }, 2, 1_000).catch(
        (e: Error) => e.message,
      ),
      listDiscrepancies(busy()).catch((e: Error) => e.message),
      removeDiscrepancy(busy(), 'p', 'c').catch((e: Error) => e.message),
    ]);
    ['ledgerCheck.writeCheckpoint', 'ledgerCheck.recordDiscrepancy', 'ledgerCheck.listDiscrepancies', 'ledgerCheck.removeDiscrepancy'].forEach((name, i) =>
      expect(messages[i]).toContain(name),
    );
  });
});

describe('an answer a call cannot get is not taken for done', () => {
  test('a 412 to the discrepancy insert, a 409 to its removal: thrown, naming the call', async () => {
    const discrepancy = { paymentId: 'p', chargeId: 'c', createdMs: 1, reason: 'record-failed' as never, detail: '' };
    const inserted = await recordDiscrepancy(clientOf(() => restError(412)).client, discrepancy, 2, 1_000).catch((e: Error) => e);
    expect((inserted as Error).message).toContain('ledgerCheck.recordDiscrepancy');
    const removed = await removeDiscrepancy(clientOf(() => restError(409)).client, 'p', 'c').catch((e: Error) => e);
    expect((removed as Error).message).toContain('ledgerCheck.removeDiscrepancy');
  });
});

describe("one payment's discrepancies", () => {
  test("the query is the range of the payment's row keys, a quote in its id escaped for OData; a field that is not text reads as empty", async () => {
    const { client, calls } = clientOf(() => [
      { paymentId: "pay'1", chargeId: 'ch_1', chargeCreatedMs: BigInt(1), reason: 'record-failed', foundAtMs: BigInt(2) },
    ]);
    expect(await listDiscrepancies(client, { paymentId: "pay'1" })).toEqual([
      { paymentId: "pay'1", chargeId: 'ch_1', createdMs: 1, reason: 'record-failed', detail: '', foundAtMs: 2 },
    ]);
    expect(calls[0][1]).toEqual([{ queryOptions: { filter: "PartitionKey eq 'ledger-discrepancy' and RowKey ge 'pay''1|' and RowKey lt 'pay''1}'" } }]);
  });
});
