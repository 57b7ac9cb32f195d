/**
 * The task hub's local Azurite (tools/local/durable/AzuriteStorage) does not pause for its queue sweep: Azurite's
 * queue service sweeps the extents of deleted messages every 60 s without yielding its event loop, in time that grows
 * with the square of their number (5,000 deleted messages paused it 37.9 s here; a 1.9 s pause stalled the bench's
 * start API). The launcher makes the sweeps daily. Deletes 2,500 messages, then watches the process past the 60 s
 * mark: without the change its sweep pauses it for seconds.
 */
import {
  AccountSASPermissions,
  AccountSASResourceTypes,
  AccountSASServices,
  StorageSharedKeyCredential,
  generateAccountSASQueryParameters,
} from '@azure/storage-blob';
import { AzuriteStorage } from '../../tools/local/durable/AzuriteStorage';

const MESSAGES = 2_500;

/** Queue REST calls on the Azurite's queue endpoint, signed with an account SAS. */
function queueApi(connectionString: string) {
  const endpoint = /QueueEndpoint=([^;]+)/.exec(connectionString)![1];
  const key = /AccountKey=([^;]+)/.exec(connectionString)![1];
  const sas = generateAccountSASQueryParameters(
    {
      expiresOn: new Date(Date.now() + 3_600_000),
      permissions: AccountSASPermissions.parse('rwdlacup'),
      services: AccountSASServices.parse('q').toString(),
      resourceTypes: AccountSASResourceTypes.parse('sco').toString(),
    },
    new StorageSharedKeyCredential('devstoreaccount1', key),
  ).toString();
  return async (method: string, path: string, body?: string) => {
    const response = await fetch(`${endpoint}/${path}?${sas}`, { method, body });
    if (response.status >= 300) throw new Error(`${method} ${path}: HTTP ${response.status} ${await response.text()}`);
  };
}

test('deleted queue messages: no sweep pause of the task hub Azurite past its 60 s mark', async () => {
  const startedAtMs = Date.now();
  const storage = await AzuriteStorage.start();
  try {
    const call = queueApi(storage.connectionString);
    await call('PUT', 'sweepcheck');
    const body = `<QueueMessage><MessageText>${'x'.repeat(400)}</MessageText></QueueMessage>`;
    for (let i = 0; i < MESSAGES; i += 50) await Promise.all(Array.from({ length: 50 }, () => call('POST', 'sweepcheck/messages', body)));
    await call('DELETE', 'sweepcheck/messages'); // every message deleted: their extents are what a sweep removes
    const readyAtMs = Date.now();
    // Past the first periodic sweep (60 s after the service started, which was after startedAtMs), with a margin.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAtMs + 70_000 - Date.now())));
    const pauses = storage.stalls(readyAtMs);
    expect(pauses.filter((p) => p.ms >= 3_000)).toEqual([]);
  } finally {
    await storage.stop();
  }
}, 180_000);
