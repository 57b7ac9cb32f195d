import { InvocationContext, type Timer } from '@azure/functions';
import {
  blobVersionKey,
  cosmosChangeKey,
  defaultBatchEventKey,
  eventGridEventKey,
  InvalidKeyError,
  keyFromCloudEvent,
  storageQueueMessageKey,
  timerOccurrenceKey,
} from 'azure-functions-idempotency';

/** A context as @azure/functions v4 builds it for a trigger (test mode): the trigger's metadata, camel-cased. */
const contextWith = (triggerMetadata: Record<string, unknown>): InvocationContext =>
  new InvocationContext({ invocationId: 'inv', functionName: 'f', triggerMetadata, logHandler: () => undefined });

describe('keys for every trigger: the stable identity of one operation, never a per-delivery value', () => {
  test('Event Hubs (cardinality many): a structured CloudEvent, or binary cloudEvents:* properties of that event; offsets never', () => {
    const context = contextWith({
      sequenceNumberArray: [7, 8],
      offsetArray: ['100', '200'],
      partitionContext: { partitionId: '3' },
      propertiesArray: [{}, { 'cloudEvents:source': '/payments', 'cloudEvents:id': 'e-2', 'cloudEvents:specversion': '1.0' }],
    });
    expect(defaultBatchEventKey('rewards', { specversion: '1.0', source: '/payments', id: 'e-1' }, 0, context)).toEqual(
      keyFromCloudEvent('rewards', { source: '/payments', id: 'e-1' }),
    );
    expect(defaultBatchEventKey('rewards', { points: 1 }, 1, context)).toEqual(keyFromCloudEvent('rewards', { source: '/payments', id: 'e-2' }));
    // The same event appended again by a producer retry: new offset and sequence number, same key.
    const retried = contextWith({
      sequenceNumberArray: [9],
      offsetArray: ['300'],
      propertiesArray: [{ 'cloudEvents:source': '/payments', 'cloudEvents:id': 'e-2' }],
    });
    expect(defaultBatchEventKey('rewards', { points: 1 }, 0, retried)).toEqual(defaultBatchEventKey('rewards', { points: 1 }, 1, context));
    expect(() => defaultBatchEventKey('rewards', { points: 1 }, 0, context)).toThrow(/offset and sequence number/);
    expect(() => defaultBatchEventKey('rewards', { specversion: '1.0', id: 'e-1' }, 0, context)).toThrow(/incomplete CloudEvent/);
  });

  test('Event Grid: CloudEvents schema -> source + id; Event Grid schema -> topic + id; neither is refused', () => {
    expect(eventGridEventKey('c', { specversion: '1.0', source: '/s', id: '1', type: 't' })).toEqual(keyFromCloudEvent('c', { source: '/s', id: '1' }));
    const gridEvent = {
      id: '1',
      topic: '/subscriptions/x/topics/t',
      subject: 'a',
      eventType: 't',
      dataVersion: '1',
      eventTime: '2026-01-01T00:00:00Z',
      data: {},
    };
    const key = eventGridEventKey('c', gridEvent);
    expect(key.key).toBe(JSON.stringify(['/subscriptions/x/topics/t', '1']));
    expect(eventGridEventKey('c', { ...gridEvent, eventTime: '2026-01-02T00:00:00Z' })).toEqual(key); // a redelivery keeps topic + id
    expect(() => eventGridEventKey('c', { ...gridEvent, topic: undefined })).toThrow(InvalidKeyError);
    expect(() => eventGridEventKey('c', { data: 1 })).toThrow(/pass keyOf/);
  });

  test('Storage queue: the message id, the same on every dequeue (pop receipt and dequeue count change)', () => {
    const first = contextWith({ id: 'q-1', popReceipt: 'AAA', dequeueCount: 1, insertionTime: '2026-01-01T00:00:00Z' });
    const again = contextWith({ id: 'q-1', popReceipt: 'BBB', dequeueCount: 2, insertionTime: '2026-01-01T00:00:00Z' });
    expect(storageQueueMessageKey('c', 'body', first)).toEqual(storageQueueMessageKey('c', 'body', again));
    expect(() => storageQueueMessageKey('c', 'body', contextWith({ popReceipt: 'AAA' }))).toThrow(InvalidKeyError);
  });

  test('Timer: the function and the occurrence it runs for (scheduleStatus.next during the run), shared by an overlapping or past-due run', () => {
    const timer = (next: string, isPastDue = false): Timer => ({
      isPastDue,
      schedule: { adjustForDST: true },
      scheduleStatus: { last: '2026-12-01T03:00:00.000Z', next, lastUpdated: '2026-12-01T03:00:00.000Z' },
    });
    const run = timerOccurrenceKey('jobs', 'nightly', timer('2026-12-01T04:00:00.000Z'));
    expect(timerOccurrenceKey('jobs', 'nightly', timer('2026-12-01T04:00:00+00:00', true))).toEqual(run); // the past-due run after a restart
    expect(timerOccurrenceKey('jobs', 'nightly', timer('2026-12-01T05:00:00.000Z'))).not.toEqual(run);
    expect(timerOccurrenceKey('jobs', 'other', timer('2026-12-01T04:00:00.000Z'))).not.toEqual(run);
    expect(() => timerOccurrenceKey('jobs', 'nightly', { isPastDue: false, schedule: { adjustForDST: true } })).toThrow(/useMonitor/);
  });

  test('Cosmos DB change feed: a document version (_rid + _lsn); a replay repeats it, a new write is a new key', () => {
    const doc = { id: 'o-1', _rid: 'abc==', _lsn: 41, _etag: '"1"', status: 'paid' };
    expect(cosmosChangeKey('c', { ...doc })).toEqual(cosmosChangeKey('c', doc));
    expect(cosmosChangeKey('c', { ...doc, _lsn: 42 })).not.toEqual(cosmosChangeKey('c', doc));
    expect(() => cosmosChangeKey('c', { id: 'o-1' })).toThrow(InvalidKeyError);
  });

  test('Blob: the path and the content version (versionId, else lastModified + contentLength + contentHash), never the ETag', () => {
    const meta = (properties: Record<string, unknown>) =>
      contextWith({ blobTrigger: 'uploads/a.csv', uri: 'http://x/uploads/a.csv', properties: { eTag: {}, ...properties } });
    const v1 = { lastModified: '2026-12-01T10:00:00+00:00', contentLength: 10, contentHash: 'q1' };
    expect(blobVersionKey('c', Buffer.from('x'), meta(v1))).toEqual(blobVersionKey('c', Buffer.from('x'), meta({ ...v1 })));
    expect(blobVersionKey('c', Buffer.from('x'), meta({ ...v1, lastModified: '2026-12-01T10:00:01+00:00' }))).not.toEqual(
      blobVersionKey('c', Buffer.from('x'), meta(v1)),
    );
    expect(blobVersionKey('c', Buffer.from('x'), meta({ ...v1, versionId: '2026-12-01T10:00:00.1234567Z' }))).not.toEqual(
      blobVersionKey('c', Buffer.from('x'), meta(v1)),
    );
    expect(() => blobVersionKey('c', Buffer.from('x'), contextWith({ blobTrigger: 'uploads/a.csv', properties: { eTag: {} } }))).toThrow(/version/);
  });
});
