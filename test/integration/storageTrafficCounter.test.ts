import { TableClient } from '@azure/data-tables';
import { BlobServiceClient } from '@azure/storage-blob';
import { createHmac } from 'node:crypto';
import { StorageTrafficCounter } from '../../tools/bench/StorageTrafficCounter';
import { AzuriteStorage } from '../../tools/local/durable/AzuriteStorage';

/** A Queue REST call signed with the account key (SharedKey), as the Durable provider's SDK sends it. */
async function queueCall(connectionString: string, method: string, path: string, body = ''): Promise<{ status: number; text: string }> {
  const endpoint = /QueueEndpoint=([^;]+)/.exec(connectionString)![1];
  const account = /AccountName=([^;]+)/.exec(connectionString)![1];
  const key = /AccountKey=([^;]+)/.exec(connectionString)![1];
  const url = new URL(`${endpoint}${path}`);
  const headers: Record<string, string> = { 'x-ms-date': new Date().toUTCString(), 'x-ms-version': '2021-12-02' };
  if (body) headers['content-type'] = 'application/xml';
  const length = Buffer.byteLength(body);
  const canonicalHeaders = Object.keys(headers)
    .filter((h) => h.startsWith('x-ms-'))
    .sort()
    .map((h) => `${h}:${headers[h]}\n`)
    .join('');
  const params = [...url.searchParams.keys()].sort().map((k) => `\n${k.toLowerCase()}:${url.searchParams.get(k)}`);
  const resource = `/${account}${url.pathname}${params.join('')}`;
  const toSign =
    [method, '', '', length > 0 ? String(length) : '', '', headers['content-type'] ?? '', '', '', '', '', '', ''].join('\n') +
    '\n' +
    canonicalHeaders +
    resource;
  headers.authorization = `SharedKey ${account}:${createHmac('sha256', Buffer.from(key, 'base64')).update(toSign, 'utf8').digest('base64')}`;
  const answer = await fetch(url, { method, headers, body: body || undefined });
  return { status: answer.status, text: await answer.text() };
}

describe('StorageTrafficCounter: storage transactions counted on the wire, on a real Azurite (blob, queue, table)', () => {
  let storage: AzuriteStorage;
  let counter: StorageTrafficCounter;

  beforeAll(async () => {
    storage = await AzuriteStorage.start();
    counter = await StorageTrafficCounter.start(storage.connectionString, (_, name) => name.replace(/^hub/, '').replace(/^-/, '').replace(/-\d+$/, ''));
  }, 60_000);
  afterAll(async () => {
    await counter?.stop();
    await storage?.stop();
  });

  test('queue: a dequeue that finds nothing is an emptyGet, one that returns a message a get; puts, deletes, visibility updates counted', async () => {
    const cs = counter.connectionString;
    const before = counter.snapshot();
    expect((await queueCall(cs, 'PUT', '/hub-control-00')).status).toBe(201);
    expect((await queueCall(cs, 'GET', '/hub-control-00/messages?numofmessages=32&visibilitytimeout=30')).status).toBe(200);
    expect((await queueCall(cs, 'POST', '/hub-control-00/messages', '<QueueMessage><MessageText>aGk=</MessageText></QueueMessage>')).status).toBe(201);
    const got = await queueCall(cs, 'GET', '/hub-control-00/messages?numofmessages=32&visibilitytimeout=30');
    const id = /<MessageId>([^<]+)<\/MessageId>/.exec(got.text)![1];
    const pop = /<PopReceipt>([^<]+)<\/PopReceipt>/.exec(got.text)![1];
    const updated = await queueCall(
      cs,
      'PUT',
      `/hub-control-00/messages/${id}?popreceipt=${encodeURIComponent(pop)}&visibilitytimeout=0`,
      '<QueueMessage><MessageText>aGk=</MessageText></QueueMessage>',
    );
    expect(updated.status).toBe(204);
    const again = await queueCall(cs, 'GET', '/hub-control-00/messages?numofmessages=1');
    const pop2 = /<PopReceipt>([^<]+)<\/PopReceipt>/.exec(again.text)![1];
    expect((await queueCall(cs, 'DELETE', `/hub-control-00/messages/${id}?popreceipt=${encodeURIComponent(pop2)}`)).status).toBe(204);
    const after = counter.snapshot();
    const delta = (k: string) => (after.requests[k] ?? 0) - (before.requests[k] ?? 0);
    expect(delta('queue.control.create')).toBe(1);
    expect(delta('queue.control.emptyGet')).toBe(1);
    expect(delta('queue.control.put')).toBe(1);
    expect(delta('queue.control.get')).toBe(2);
    expect(delta('queue.control.updateVisibility')).toBe(1);
    expect(delta('queue.control.delete')).toBe(1);
    expect(after.dequeuedMessages.control - (before.dequeuedMessages.control ?? 0)).toBe(2);
    expect(after.billing['queue.control.emptyGet']).toBe('class2');
    expect(after.billing['queue.control.put']).toBe('class1');
  }, 60_000);

  test('table: each SDK call is one request, a batch of two entities is one transaction of its table', async () => {
    const table = TableClient.fromConnectionString(counter.connectionString, 'hubInstances', { allowInsecureConnection: true });
    const before = counter.snapshot();
    await table.createTable();
    await table.createEntity({ partitionKey: 'p', rowKey: '1', n: 1 });
    await table.getEntity('p', '1');
    await table.submitTransaction([
      ['create', { partitionKey: 'p', rowKey: '2' }],
      ['create', { partitionKey: 'p', rowKey: '3' }],
    ]);
    await table.updateEntity({ partitionKey: 'p', rowKey: '1', n: 2 }, 'Merge');
    const after = counter.snapshot();
    const delta = (k: string) => (after.requests[k] ?? 0) - (before.requests[k] ?? 0);
    expect(delta('table.account.createTable')).toBe(1);
    expect(delta('table.Instances.insert')).toBe(1);
    expect(delta('table.Instances.read')).toBe(1);
    expect(delta('table.Instances.batch')).toBe(1);
    expect(delta('table.Instances.merge')).toBe(1);
  }, 60_000);

  test('blob: lease acquire, renew and release counted by action; a blob put and get', async () => {
    const service = BlobServiceClient.fromConnectionString(counter.connectionString);
    const container = service.getContainerClient('hub-leases');
    const before = counter.snapshot();
    await container.create();
    const blob = container.getBlockBlobClient('default/hub-control-00');
    await blob.upload('x', 1);
    const lease = blob.getBlobLeaseClient();
    await lease.acquireLease(15);
    await lease.renewLease();
    await lease.releaseLease();
    await blob.downloadToBuffer();
    const after = counter.snapshot();
    const delta = (k: string) => (after.requests[k] ?? 0) - (before.requests[k] ?? 0);
    expect(delta('blob.leases.createContainer')).toBe(1);
    expect(delta('blob.leases.putBlob')).toBe(1);
    expect(delta('blob.leases.lease.acquire')).toBe(1);
    expect(delta('blob.leases.lease.renew')).toBe(1);
    expect(delta('blob.leases.lease.release')).toBe(1);
    expect(delta('blob.leases.getBlob')).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
