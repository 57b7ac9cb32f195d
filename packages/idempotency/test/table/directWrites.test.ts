import type { PipelineRequest } from '@azure/core-rest-pipeline';
import type { TableClient, TableEntity } from '@azure/data-tables';
import { CallDeadlines } from '../../src/protocol/CallDeadlines';
import { insertDirect, mergeDirect } from '../../src/stores/table/directWrites';
import { useAzurite } from '../../../../test/support/azurite';
import { freshTable } from '../../../../test/support/tables';

/**
 * The Table store's direct marker writes (directWrites.ts) against the public methods they stand for, on Azurite: the
 * same request on the wire, the same answer, the same error; the public method whenever the direct one does not apply.
 * And CallDeadlines' reuse of a settled call's AbortController.
 */
const azuriteOf = useAzurite();
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** A fresh table whose requests are recorded as sent (without what differs per request: date, signature, request id). */
async function recordedTable(): Promise<{ client: TableClient; sent: Sent[] }> {
  const client = await freshTable(azuriteOf());
  const sent: Sent[] = [];
  client.pipeline.addPolicy(
    {
      name: 'recordRequests',
      sendRequest: (request: PipelineRequest, next) => {
        const headers = request.headers.toJSON();
        for (const name of ['x-ms-date', 'authorization', 'x-ms-client-request-id', 'if-match']) delete headers[name];
        sent.push({ method: request.method, path: new URL(request.url).pathname.replace(client.tableName, 'TABLE'), headers, body: request.body });
        return next(request);
      },
    },
    { afterPhase: 'Sign' },
  );
  return { client, sent };
}

const marker = (rowKey: string): TableEntity => ({
  partitionKey: "p0'1",
  rowKey,
  kind: 'marker',
  status: 'InProgress',
  attempt: 1,
  leaseExpiresAtMs: { value: '1700000000000', type: 'Int64' },
});
const patch = (rowKey: string): TableEntity => ({
  partitionKey: "p0'1",
  rowKey,
  status: 'Completed',
  leaseExpiresAtMs: { value: '0', type: 'Int64' },
  resultJson: '{"a":1}',
});
const signal = () => new AbortController().signal;
const without = <T extends object>(value: T, ...names: string[]) => Object.fromEntries(Object.entries(value).filter(([name]) => !names.includes(name)));

describe('direct marker writes', () => {
  test('insert and merge send what createEntity and updateEntity(Merge) send, and answer and fail alike', async () => {
    const pub = await recordedTable();
    const direct = await recordedTable();
    const created = await pub.client.createEntity(marker("r'1"), { abortSignal: signal() });
    const inserted = await insertDirect(direct.client, marker("r'1"), signal());
    const updated = await pub.client.updateEntity(patch("r'1"), 'Merge', { etag: created.etag, abortSignal: signal() });
    const merged = await mergeDirect(direct.client, patch("r'1"), inserted!.etag!, signal());
    expect(direct.sent).toEqual(pub.sent);
    expect(direct.sent.map((s) => s.method)).toEqual(['POST', 'PATCH']);
    const answerOf = (answer: object | undefined) => without(answer ?? {}, 'etag', 'date', 'requestId', 'clientRequestId');
    expect(answerOf(inserted)).toEqual(answerOf(created));
    expect(answerOf(merged)).toEqual(answerOf(updated));
    const failureOf = (write: () => Promise<unknown> | undefined) =>
      Promise.resolve()
        .then(write)
        .then(
          () => undefined,
          (error: { name: string; statusCode?: number; details?: { errorCode?: string } }) => [error.name, error.statusCode, error.details?.errorCode],
        );
    expect(await failureOf(() => insertDirect(direct.client, marker("r'1"), signal()))).toEqual(await failureOf(() => pub.client.createEntity(marker("r'1"))));
    expect(await failureOf(() => mergeDirect(direct.client, patch("r'1"), created.etag!, signal()))).toEqual(['RestError', 412, 'UpdateConditionNotSatisfied']);
  });

  test('the public method is used with a tracer registered, a method replaced on the client, or a value written otherwise', async () => {
    const { client } = await recordedTable();
    const registry = globalThis as Record<symbol, unknown>;
    const before = registry[OTEL_GLOBAL];
    registry[OTEL_GLOBAL] = { trace: {} };
    try {
      expect(insertDirect(client, marker('a'), signal())).toBeUndefined();
    } finally {
      registry[OTEL_GLOBAL] = before;
    }
    expect(insertDirect(client, { ...marker('b'), flag: true }, signal())).toBeUndefined();
    expect(mergeDirect(client, { ...patch('b'), at: new Date(0) }, '*', signal())).toBeUndefined();
    const original = client.createEntity.bind(client);
    client.createEntity = (...args: Parameters<TableClient['createEntity']>) => original(...args);
    expect(insertDirect(client, marker('c'), signal())).toBeUndefined();
    // Only the replaced method is left to the public API: the merge still goes direct (no such row here: 404).
    await expect(mergeDirect(client, patch('c'), '*', signal())).rejects.toMatchObject({ statusCode: 404 });
  });
});

describe('CallDeadlines: reused signals', () => {
  test('a call settled by its answer lends its signal to the next call; an aborted one never serves again', async () => {
    const deadlines = new CallDeadlines(50, 'test store', true);
    const signals: AbortSignal[] = [];
    const answer = (abortSignal: AbortSignal) => (signals.push(abortSignal), Promise.resolve('ok'));
    await deadlines.run('first', 'read', answer);
    await deadlines.run('second', 'read', answer);
    expect(signals[1]).toBe(signals[0]);
    // Two at once: each has its own.
    let release: () => void = () => undefined;
    const held = deadlines.run(
      'held',
      'read',
      (abortSignal) => (signals.push(abortSignal), new Promise<string>((resolve) => (release = () => resolve('late')))),
    );
    await deadlines.run('beside', 'read', answer);
    expect(signals[3]).not.toBe(signals[2]);
    release();
    await held;
    // A call past its deadline: its signal aborts with the deadline's error, and is not handed on.
    const hung = deadlines.run('hung', 'write', (abortSignal) => (signals.push(abortSignal), new Promise<string>(() => undefined)));
    await expect(hung).rejects.toThrow(/did not answer hung within 50 ms/);
    const aborted = signals[signals.length - 1];
    expect(aborted.aborted).toBe(true);
    await deadlines.run('after', 'read', answer);
    expect(signals[signals.length - 1]).not.toBe(aborted);
    expect(signals[signals.length - 1].aborted).toBe(false);
  });

  test('without reuse every call has a new signal', async () => {
    const deadlines = new CallDeadlines(50, 'test store');
    const signals: AbortSignal[] = [];
    for (let i = 0; i < 3; i++) await deadlines.run('call', 'read', (abortSignal) => (signals.push(abortSignal), Promise.resolve(i)));
    expect(new Set(signals).size).toBe(3);
  });
});
