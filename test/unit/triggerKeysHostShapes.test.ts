import { app, type InvocationContext } from '@azure/functions';
import {
  blobVersionKey,
  cosmosChangeKey,
  defaultBatchEventKey,
  defaultInvocationKey,
  eventGridEventKey,
  InMemoryIdempotencyStore,
  keyFromCloudEvent,
  keyFromMessageId,
  makeIdempotentBatch,
  storageQueueMessageKey,
  timerOccurrenceKey,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { WorkerHost } from '../../tools/local/host/WorkerHost';
import { invocationRequest, json, text, utf8, type DotNet } from '../support/hostTriggerData';

/**
 * Every trigger key fed the trigger data as the Functions host builds it (test/support/hostTriggerData.ts: the
 * host's RPC conversion and its copy of a JSON body over the metadata) and turned into the handler's arguments by
 * `@azure/functions`' own conversion (`WorkerHost`: `InvocationModel.getArguments`). Evidence, per trigger:
 * - Service Bus: `ServiceBusTriggerBindingStrategy.AddBindingData` (Azure/azure-sdk-for-net,
 *   sdk/servicebus/Microsoft.Azure.WebJobs.Extensions.ServiceBus/src/Triggers/ServiceBusTriggerBindingStrategy.cs);
 * - Storage queue: `QueueTriggerBinding.CreateBindingData` (Azure/azure-sdk-for-net,
 *   sdk/storage/Microsoft.Azure.WebJobs.Extensions.Storage.Queues/src/Triggers/QueueTriggerBinding.cs);
 * - Event Hubs: `EventHubTriggerBindingStrategy.AddBindingData(.., EventData[])` (Azure/azure-sdk-for-net,
 *   sdk/eventhub/Microsoft.Azure.WebJobs.Extensions.EventHubs/src/Triggers/EventHubTriggerBindingStrategy.cs);
 * - Blob: `BlobTriggerBinding.CreateBindingData` (Azure/azure-sdk-for-net,
 *   sdk/storage/Microsoft.Azure.WebJobs.Extensions.Storage.Blobs/src/Triggers/BlobTriggerBinding.cs): `Properties` is the
 *   SDK's `BlobProperties`, whose `ETag` is an `Azure.ETag` struct (sdk/core/Azure.Core/src/ETag.cs: no public
 *   property, no converter), so Json.NET writes `"ETag":{}`;
 * - the body copied over the metadata: `Utility.ApplyBindingData` (Azure/azure-functions-host, src/WebJobs.Script/Utility.cs)
 *   into `Binder.BindingData` (Azure/azure-webjobs-sdk, src/Microsoft.Azure.WebJobs.Host/Bindings/Runtime/Binder.cs);
 * - a batch's empty text bodies dropped: `ToRpcStringArray` (Azure/azure-functions-host,
 *   src/WebJobs.Script.Grpc/MessageExtensions/GrpcMessageConversionExtensions.cs).
 */

type Answer = { key: IdempotencyKey } | { error: string };
const answer = (make: () => IdempotencyKey): Answer => {
  try {
    return { key: make() };
  } catch (error) {
    return { error: (error as Error).message };
  }
};

const host = WorkerHost.load(() => {
  app.serviceBusQueue('bus', {
    connection: 'Sb',
    queueName: 'q',
    handler: (m: unknown, c: InvocationContext) => answer(() => defaultInvocationKey('c', m, c)),
  });
  app.storageQueue('queue', {
    connection: 'St',
    queueName: 'q',
    handler: (m: unknown, c: InvocationContext) => answer(() => storageQueueMessageKey('c', m, c)),
  });
  app.storageBlob('blob', { connection: 'St', path: 'uploads/{name}', handler: (b: unknown, c: InvocationContext) => answer(() => blobVersionKey('c', b, c)) });
  app.eventHub('hub', {
    connection: 'Eh',
    eventHubName: 'h',
    cardinality: 'many',
    handler: (events: unknown, c: InvocationContext) =>
      (events as unknown[]).map((event, index) => answer(() => defaultBatchEventKey('c', event, index, c, (events as unknown[]).length))),
  });
  app.eventHub('oneEvent', {
    connection: 'Eh',
    eventHubName: 'h',
    cardinality: 'one',
    handler: (event: unknown, c: InvocationContext) => answer(() => defaultBatchEventKey('c', event, 0, c)),
  });
  app.eventGrid('grid', { handler: (e: unknown) => answer(() => eventGridEventKey('c', e)) });
  app.cosmosDB('feed', {
    connection: 'Cx',
    databaseName: 'd',
    containerName: 'k',
    handler: (docs: unknown[]) => docs.map((d) => answer(() => cosmosChangeKey('c', d))),
  });
  // Probes: what the handler's context really holds (the shapes the keys above must survive).
  app.storageQueue('queueProbe', { connection: 'St', queueName: 'q', handler: (_m: unknown, c: InvocationContext) => c.triggerMetadata });
  app.storageBlob('blobProbe', { connection: 'St', path: 'uploads/{name}', handler: (_b: unknown, c: InvocationContext) => c.triggerMetadata });
  app.timer('nightly', { schedule: '0 0 4 * * *', handler: (t: unknown, c: InvocationContext) => answer(() => timerOccurrenceKey('c', c.functionName, t)) });
});

const invoke = (fn: string, type: string, input: DotNet, bindingData: Record<string, DotNet>) =>
  host.invoke(fn, invocationRequest(host.bindingName(fn, type), input, bindingData));

/** A Service Bus message's binding data (single dispatch) as the extension adds it. */
function busData(messageId: string, applicationProperties: Record<string, unknown> = {}): Record<string, DotNet> {
  return {
    DeliveryCount: json(1),
    LockToken: text('a7c1e1c2-lock'),
    ExpiresAtUtc: json('2026-12-09T10:00:00'),
    EnqueuedTimeUtc: json('2026-12-02T10:00:00'),
    MessageId: text(messageId),
    ContentType: { string: null },
    SequenceNumber: json(17),
    ApplicationProperties: json(applicationProperties),
    UserProperties: json(applicationProperties),
  };
}

describe('Service Bus (makeIdempotent default key, the payments consumer): the metadata messageId, never a body field', () => {
  test('the MessageId keys a message; a body messageId (any case) would replace it, so the key is refused naming keyOf', async () => {
    expect(await invoke('bus', 'serviceBusTrigger', text('{"paymentId":"p-1"}'), busData('p-1'))).toEqual({ key: keyFromMessageId('c', 'p-1') });
    for (const body of ['{"paymentId":"p-1","messageId":"p-9"}', '{"paymentId":"p-1","MESSAGEID":"p-9"}']) {
      const refused = await invoke('bus', 'serviceBusTrigger', text(body), busData('p-1'));
      expect(refused).toEqual({ error: expect.stringMatching(/"messageId".*ApplyBindingData.*keyOf.*dataType: 'binary'/s) });
    }
    // Bytes are never copied over the metadata: the same body as dataType 'binary' is keyed by its MessageId.
    const asBytes = { bytes: utf8('{"paymentId":"p-1","messageId":"p-9"}') };
    expect(await invoke('bus', 'serviceBusTrigger', asBytes, busData('p-1'))).toEqual({ key: keyFromMessageId('c', 'p-1') });
  });

  test('a MessageId that is JSON number text arrives parsed (its text is lost): refused, so two MessageIds never share a key', async () => {
    // The broker deduplicates on the string: "42", "42.0", "4.2e1" and " 42" are four messages; "-0" is not "0", "1e3" not "1000".
    const ids = ['42', '42.0', '4.2e1', ' 42', '-0', '0', '1e3', '1000', '12345678901234567891'];
    const keys = new Map<string, string>();
    for (const id of ids) {
      const got = (await invoke('bus', 'serviceBusTrigger', text('x'), busData(id))) as Answer;
      if ('error' in got) {
        expect(got.error).toMatch(/arrived as the number .*text the broker saw is lost.*keyOf/s);
        continue;
      }
      expect(got.key.key).toBe(id); // accepted only as the exact string the broker saw
      expect(keys.has(got.key.key)).toBe(false);
      keys.set(got.key.key, id);
    }
    // Text that is not a JSON number reaches the handler as the string the broker saw, and is its key.
    for (const id of ['042', '42a', 'order-42', '+42', '.5']) {
      expect(await invoke('bus', 'serviceBusTrigger', text('x'), busData(id))).toEqual({ key: keyFromMessageId('c', id) });
    }
  });

  test('a binary-mode CloudEvent in the application properties; a body applicationProperties field is refused; a structured one as bytes', async () => {
    const ce = { 'cloudEvents:source': '/payments', 'cloudEvents:id': 'e-1', 'cloudEvents:specversion': '1.0' };
    const event = keyFromCloudEvent('c', { source: '/payments', id: 'e-1' });
    expect(await invoke('bus', 'serviceBusTrigger', text('{"amount":1}'), busData('m-1', ce))).toEqual({ key: event });
    const hiding = await invoke('bus', 'serviceBusTrigger', text('{"amount":1,"applicationProperties":{}}'), busData('m-1', ce));
    expect(hiding).toEqual({ error: expect.stringMatching(/applicationProperties/) });
    const structured = { bytes: utf8(JSON.stringify({ specversion: '1.0', source: '/payments', id: 'e-1', data: {} })) };
    expect(await invoke('bus', 'serviceBusTrigger', structured, busData('m-1'))).toEqual({ key: event });
  });
});

describe('Storage queue: the message id, never a body id', () => {
  const queueData = (id: string, body: string): Record<string, DotNet> => ({
    QueueTrigger: text(body),
    DequeueCount: json(1),
    ExpirationTime: json('2026-12-09T10:00:00+00:00'),
    Id: text(id),
    InsertionTime: json('2026-12-02T10:00:00+00:00'),
    NextVisibleTime: json('2026-12-02T10:10:00+00:00'),
    PopReceipt: text('AgAAAAMAAAAAAAAA'),
  });

  test('probe: the host copied the body id over the message id, and the library passes it on as the metadata id', async () => {
    const body = '{"id":"cust-42","amount":5}';
    const meta = (await invoke('queueProbe', 'queueTrigger', text(body), queueData('5f0c8a52-first', body))) as Record<string, unknown>;
    expect(meta).toMatchObject({ id: 'cust-42', queueTrigger: { id: 'cust-42', amount: 5 }, dequeueCount: 1, amount: 5 });
  });

  test('two messages whose bodies say {"id":"cust-42"} no longer share a key: both are refused; other bodies key by the message id', async () => {
    const body = '{"id":"cust-42","amount":5}';
    const first = await invoke('queue', 'queueTrigger', text(body), queueData('5f0c8a52-first', body));
    const second = await invoke('queue', 'queueTrigger', text(body), queueData('9d3b1e77-second', body));
    expect(first).toEqual({ error: expect.stringMatching(/"id".*keyOf/s) });
    expect(second).toEqual(first);
    const plain = '{"customerId":"cust-42"}';
    expect(await invoke('queue', 'queueTrigger', text(plain), queueData('5f0c8a52-first', plain))).toEqual({ key: keyFromMessageId('c', '5f0c8a52-first') });
    expect(await invoke('queue', 'queueTrigger', text('hello'), queueData('9d3b1e77-second', 'hello'))).toEqual({
      key: keyFromMessageId('c', '9d3b1e77-second'),
    });
  });
});

describe('Event Hubs batch: a CloudEvent identity, never a neighbour', () => {
  const ce = (id: string) => ({ 'cloudEvents:source': '/payments', 'cloudEvents:id': id, 'cloudEvents:specversion': '1.0' });
  const hubData = (n: number, properties: unknown[]): Record<string, DotNet> => ({
    PartitionContext: json({ PartitionId: '3' }),
    PartitionKeyArray: { strings: Array.from({ length: n }, () => null) },
    OffsetArray: { strings: Array.from({ length: n }, (_, i) => String(100 * i)) },
    SequenceNumberArray: { longs: Array.from({ length: n }, (_, i) => i + 1) },
    EnqueuedTimeUtcArray: json(Array.from({ length: n }, () => '2026-12-02T10:00:00')),
    PropertiesArray: json(properties),
    SystemPropertiesArray: json(Array.from({ length: n }, (_, i) => ({ SequenceNumber: i + 1, Offset: 100 * i }))),
  });
  const key = (id: string) => ({ key: keyFromCloudEvent('c', { source: '/payments', id }) });

  test("dataType 'string': the host drops the empty body but keeps its properties; the events after it are refused, not keyed by a neighbour", async () => {
    const bodies = ['{"amount":1}', '', '{"amount":3}'];
    const answers = await invoke('hub', 'eventHubTrigger', { strings: bodies }, hubData(3, [ce('e-1'), ce('e-2'), ce('e-3')]));
    expect(answers).toHaveLength(2); // the empty event never reached the handler
    expect(answers).toEqual([
      { error: expect.stringMatching(/holds 2 events but its trigger metadata .*Array has 3 entries/) },
      { error: expect.stringMatching(/dataType: 'binary'/) },
    ]);
    expect(JSON.stringify(answers)).not.toContain(JSON.stringify(key('e-2').key)); // the second event never takes e-2's id
  });

  test("dataType 'binary': empty bodies are kept, the batch lines up, every event has its own id", async () => {
    const bodies = ['{"amount":1}', '', '{"amount":3}'].map(utf8);
    const answers = await invoke('hub', 'eventHubTrigger', { bytesArray: bodies }, hubData(3, [ce('e-1'), ce('e-2'), ce('e-3')]));
    expect(answers).toEqual([key('e-1'), key('e-2'), key('e-3')]);
  });

  test("one event (cardinality 'one'): its text body's top-level properties field would replace the metadata's, so it is refused", async () => {
    const oneData = (properties: unknown): Record<string, DotNet> => ({
      PartitionContext: json({ PartitionId: '3' }),
      Offset: text('100'),
      SequenceNumber: json(1),
      Properties: json(properties),
      SystemProperties: json({ SequenceNumber: 1, Offset: 100 }),
    });
    expect(await invoke('oneEvent', 'eventHubTrigger', text('{"amount":1}'), oneData(ce('e-1')))).toEqual(key('e-1'));
    const forged = text(JSON.stringify({ amount: 1, properties: ce('e-9') }));
    expect(await invoke('oneEvent', 'eventHubTrigger', forged, oneData(ce('e-1')))).toEqual({ error: expect.stringMatching(/"properties".*keyOf/s) });
  });

  test('structured CloudEvents are keyed by their own body, as text or as bytes, even in a batch that does not line up', async () => {
    const structured = (id: string) => JSON.stringify({ specversion: '1.0', source: '/payments', id, type: 't', data: { amount: 1 } });
    const asText = await invoke('hub', 'eventHubTrigger', { strings: [structured('e-1'), '', structured('e-3')] }, hubData(3, [{}, {}, {}]));
    expect(asText).toEqual([key('e-1'), key('e-3')]);
    const asBytes = await invoke('hub', 'eventHubTrigger', { bytesArray: [utf8(structured('e-1')), utf8(structured('e-2'))] }, hubData(2, [{}, {}]));
    expect(asBytes).toEqual([key('e-1'), key('e-2')]);
  });
});

describe('Blob: the path and the content version that really arrives (the ETag reaches Node as {})', () => {
  /** `BlobProperties` as Json.NET writes it (an excerpt: the fields the key may read, and the ETag). */
  const properties = (lastModified: string, length: number, md5: string | null, versionId: string | null = null) =>
    json({ LastModified: lastModified, ContentLength: length, ContentType: 'text/csv', ETag: {}, ContentHash: md5, VersionId: versionId, BlobType: 0 });
  const blobData = (props: DotNet): Record<string, DotNet> => ({
    BlobTrigger: text('uploads/a.csv'),
    Uri: json('https://acct.blob.core.windows.net/uploads/a.csv'),
    Properties: props,
    Metadata: json({}),
    name: text('a.csv'),
  });

  test('probe: the ETag reaches the handler as {} (camel-cased eTag), lastModified as Json.NET text', async () => {
    const meta = (await invoke('blobProbe', 'blobTrigger', { bytes: utf8('a,b') }, blobData(properties('2026-12-02T10:00:00+00:00', 10, 'q1d2')))) as {
      properties: Record<string, unknown>;
    };
    expect(meta).toMatchObject({ blobTrigger: 'uploads/a.csv', properties: { eTag: {}, lastModified: '2026-12-02T10:00:00+00:00', contentLength: 10 } });
  });

  test('the same version keys the same; an overwrite is a new key; a version id wins; the ETag is never read', async () => {
    const v1 = blobData(properties('2026-12-02T10:00:00+00:00', 10, 'q1d2'));
    const first = (await invoke('blob', 'blobTrigger', { bytes: utf8('a,b') }, v1)) as { key: IdempotencyKey };
    expect(first).toEqual({ key: expect.objectContaining({ consumer: 'c' }) });
    expect(await invoke('blob', 'blobTrigger', { bytes: utf8('a,b') }, v1)).toEqual(first);
    const overwrite = blobData(properties('2026-12-02T10:05:00+00:00', 10, 'q1d3'));
    expect(await invoke('blob', 'blobTrigger', { bytes: utf8('a,c') }, overwrite)).not.toEqual(first);
    const versioned = blobData(properties('2026-12-02T10:00:00+00:00', 10, 'q1d2', '2026-12-02T10:00:00.1234567Z'));
    expect(await invoke('blob', 'blobTrigger', { bytes: utf8('a,b') }, versioned)).not.toEqual(first);
  });

  test("a text JSON blob (dataType 'string') with a top-level properties field may replace the metadata: refused", async () => {
    const v1 = blobData(properties('2026-12-02T10:00:00+00:00', 10, null));
    const body = '{"properties":{"lastModified":"2020-01-01T00:00:00Z","contentLength":1}}';
    expect(await invoke('blob', 'blobTrigger', text(body), v1)).toEqual({ error: expect.stringMatching(/"properties"/) });
    expect(await invoke('blob', 'blobTrigger', text('{"rows":3}'), v1)).toEqual({ key: expect.objectContaining({ consumer: 'c' }) });
  });
});

describe('Event Grid, Cosmos DB change feed, timer: the identity is in the input itself', () => {
  test('Event Grid (json input), change feed documents (a JSON array as text), the timer occurrence (TimerInfo as Json.NET writes it)', async () => {
    const grid = { id: 'g-1', topic: '/subscriptions/x/topics/t', subject: 's', eventType: 't', dataVersion: '1', eventTime: '2026-12-02T10:00:00Z', data: {} };
    expect(await invoke('grid', 'eventGridTrigger', json(grid), {})).toEqual({ key: expect.objectContaining({ key: JSON.stringify([grid.topic, 'g-1']) }) });
    const docs = text(JSON.stringify([{ id: 'o-1', _rid: 'abc==', _lsn: 41 }]));
    expect(await invoke('feed', 'cosmosDBTrigger', docs, {})).toEqual([{ key: expect.objectContaining({ key: JSON.stringify(['abc==', '41']) }) }]);
    const timer = json({
      Schedule: { AdjustForDST: true },
      ScheduleStatus: { Last: '2026-12-01T04:00:00+00:00', Next: '2026-12-02T04:00:00+00:00', LastUpdated: '2026-12-01T04:00:00+00:00' },
      IsPastDue: false,
    });
    expect(await invoke('nightly', 'timerTrigger', timer, {})).toEqual({
      key: expect.objectContaining({ key: JSON.stringify(['nightly', '2026-12-02T04:00:00.000Z']) }),
    });
  });
});

describe('makeIdempotentBatch keys structured CloudEvents delivered as bytes by default (issue 35.5)', () => {
  test('Buffer, Uint8Array and ArrayBuffer bodies: each event completed under its CloudEvent key, a replay is all duplicates', async () => {
    const store = new InMemoryIdempotencyStore({ leaseMs: 60_000 });
    const parked: string[] = [];
    const batch = makeIdempotentBatch((_event: unknown, _c, info) => info.key.key, {
      store,
      consumer: 'c',
      park: async (_e, reason) => void parked.push(reason),
    });
    const ce = (id: string) => utf8(JSON.stringify({ specversion: '1.0', source: '/payments', id, data: { amount: 1 } }));
    const e3 = ce('e-3');
    const events = [Buffer.from(ce('e-1')), ce('e-2'), e3.buffer.slice(e3.byteOffset, e3.byteOffset + e3.byteLength)];
    const outcomes = await batch(events);
    expect(parked).toEqual([]);
    expect(outcomes.map((o) => [o.kind, o.key])).toEqual(['e-1', 'e-2', 'e-3'].map((id) => ['completed', keyFromCloudEvent('c', { source: '/payments', id })]));
    expect((await batch(events)).map((o) => o.kind)).toEqual(['duplicate', 'duplicate', 'duplicate']);
  });
});
