import { classifyStorageRequest, type StorageRequest } from '../../tools/bench/storageRequestKind';

const acct = '/devstoreaccount1';
const kind = (request: StorageRequest) => {
  const k = classifyStorageRequest(request);
  return `${k.service}.${k.resource}.${k.operation}:${k.billing}`;
};

describe('classifyStorageRequest: what a storage REST call is, for counting and billing', () => {
  test.each([
    ['POST', '/hub-control-00/messages?messagettl=-1', 'queue.hub-control-00.put:class1'],
    ['GET', '/hub-workitems/messages?numofmessages=32&visibilitytimeout=60', 'queue.hub-workitems.get:class2'],
    ['GET', '/hub-workitems/messages?numofmessages=1&peekonly=true', 'queue.hub-workitems.peek:class2'],
    ['DELETE', '/hub-control-01/messages/6f1c?popreceipt=AAA', 'queue.hub-control-01.delete:class1'],
    ['PUT', '/hub-control-01/messages/6f1c?popreceipt=AAA&visibilitytimeout=30', 'queue.hub-control-01.updateVisibility:class1'],
    ['DELETE', '/hub-control-01/messages', 'queue.hub-control-01.clear:class1'],
    ['PUT', '/hub-control-02', 'queue.hub-control-02.create:class1'],
    ['GET', '/hub-control-02?comp=metadata', 'queue.hub-control-02.getMetadata:class2'],
    ['GET', '?comp=list', 'queue.account.listQueues:class1'],
  ])('queue %s %s -> %s', (method, path, expected) => {
    expect(kind({ service: 'queue', method, url: `${acct}${path}` })).toBe(expected);
  });

  test.each([
    ['GET', "/hubInstances(PartitionKey='abc',RowKey='')", 'table.hubInstances.read:transaction'],
    ['GET', "/hubHistory()?$filter=PartitionKey%20eq%20'abc'", 'table.hubHistory.query:transaction'],
    ['GET', '/hubHistory?$filter=x', 'table.hubHistory.query:transaction'],
    ['POST', '/hubInstances', 'table.hubInstances.insert:transaction'],
    ['PUT', "/hubInstances(PartitionKey='a',RowKey='')", 'table.hubInstances.replace:transaction'],
    ['MERGE', "/hubInstances(PartitionKey='a',RowKey='')", 'table.hubInstances.merge:transaction'],
    ['PATCH', "/hubInstances(PartitionKey='a',RowKey='')", 'table.hubInstances.merge:transaction'],
    ['DELETE', "/hubInstances(PartitionKey='a',RowKey='')", 'table.hubInstances.delete:transaction'],
    ['POST', '/Tables', 'table.account.createTable:transaction'],
  ])('table %s %s -> %s', (method, path, expected) => {
    expect(kind({ service: 'table', method, url: `${acct}${path}` })).toBe(expected);
  });

  test('a POST tunnelling MERGE (X-HTTP-Method) is a merge', () => {
    expect(kind({ service: 'table', method: 'POST', url: `${acct}/t(PartitionKey='a',RowKey='b')`, headers: { 'x-http-method': 'MERGE' } })).toBe(
      'table.t.merge:transaction',
    );
  });

  test('a $batch is one transaction of the table its change set names', () => {
    const body = [
      '--batch_1',
      'Content-Type: multipart/mixed; boundary=changeset_1',
      '',
      '--changeset_1',
      'Content-Type: application/http',
      '',
      'POST http://127.0.0.1:10002/devstoreaccount1/benchIdempotency HTTP/1.1',
      'Accept: application/json',
      '',
      '{}',
    ].join('\r\n');
    expect(kind({ service: 'table', method: 'POST', url: `${acct}/$batch`, body })).toBe('table.benchIdempotency.batch:transaction');
    expect(kind({ service: 'table', method: 'POST', url: `${acct}/$batch` })).toBe('table.unknown.batch:transaction');
  });

  test.each([
    ['PUT', '/hub-leases/default/hub-control-00?comp=lease', 'acquire', 'blob.hub-leases.lease.acquire:write'],
    ['PUT', '/hub-leases/default/hub-control-00?comp=lease', 'renew', 'blob.hub-leases.lease.renew:write'],
    ['PUT', '/hub-leases?restype=container', undefined, 'blob.hub-leases.createContainer:write'],
    ['GET', '/hub-leases?restype=container&comp=list', undefined, 'blob.hub-leases.listBlobs:write'],
    ['PUT', '/hub-largemessages/abc/message.json.gz', undefined, 'blob.hub-largemessages.putBlob:write'],
    ['GET', '/hub-largemessages/abc/message.json.gz', undefined, 'blob.hub-largemessages.getBlob:read'],
    ['HEAD', '/hub-largemessages/abc/message.json.gz', undefined, 'blob.hub-largemessages.getBlobProperties:other'],
    ['DELETE', '/hub-largemessages/abc/message.json.gz', undefined, 'blob.hub-largemessages.deleteBlob:other'],
  ])('blob %s %s (lease action %s) -> %s', (method, path, action, expected) => {
    expect(kind({ service: 'blob', method, url: `${acct}${path}`, headers: action ? { 'x-ms-lease-action': action } : {} })).toBe(expected);
  });
});
