import { BlobServiceClient, type BlockBlobClient } from '@azure/storage-blob';
import { blobDownloadKey, blobVersionKey, keyFromBusinessKey } from 'azure-functions-idempotency';
import { AzuriteBlob } from '../../tools/azurite/AzuriteBlob';

/**
 * Issue 44.5: the blob trigger's metadata (`properties`: version, last modified, length, hash) comes from a request
 * apart from the content's download, with no ETag linking them (it reaches Node as `{}`): an overwrite between the two
 * processes the new content under the old version's key. `blobDownloadKey` keys the content by the response that
 * carried it (its `versionId`, else its `etag`): one request, so the key and the bytes are one version. On Azurite's
 * Blob service (no versioning there: the ETag is the version).
 */

let blobs: AzuriteBlob;
beforeAll(async () => {
  blobs = await AzuriteBlob.start();
});
afterAll(async () => {
  await blobs?.stop();
});

async function download(blob: BlockBlobClient) {
  const response = await blob.download();
  const chunks: Buffer[] = [];
  for await (const chunk of response.readableStreamBody!) chunks.push(Buffer.from(chunk as Buffer));
  return { response, content: Buffer.concat(chunks).toString('utf8') };
}

test('an overwrite between the properties and the download: the trigger-metadata key names the old version, the download key the content it came with', async () => {
  const container = BlobServiceClient.fromConnectionString(blobs.connectionString).getContainerClient('uploads');
  await container.createIfNotExists();
  const blob = container.getBlockBlobClient('invoice-7.json');
  await blob.upload('{"v":1}', 7);
  // What the host reads first (BlobProperties), as it reaches Node: lastModified, length, no ETag (`{}`), no MD5.
  const props = await blob.getProperties();
  const triggerMetadata = {
    blobTrigger: 'uploads/invoice-7.json',
    properties: { lastModified: props.lastModified!.toISOString(), contentLength: props.contentLength, eTag: {} },
  };
  await blob.upload('{"v":2}', 7); // overwritten before the download, in the same second, same length
  const { response, content } = await download(blob);
  expect(content).toBe('{"v":2}');
  // The old helper keys v2's bytes with v1's properties (the same key v1's own run would get: v1 is never processed).
  const fromMetadata = blobVersionKey('c', Buffer.from(content), { triggerMetadata });
  expect(fromMetadata.key).toContain(props.lastModified!.toISOString());
  // The download key is the content's own version: v2's ETag; v1's download (had it come) had another.
  const key = blobDownloadKey('c', 'uploads/invoice-7.json', response);
  expect(key).toEqual(keyFromBusinessKey('c', JSON.stringify(['uploads/invoice-7.json', 'etag', response.etag]), (t) => t));
  expect(response.etag).not.toBe(props.etag);
  // The same version downloaded again (a retry) has the same key; a new upload a new one.
  expect(blobDownloadKey('c', 'uploads/invoice-7.json', (await download(blob)).response)).toEqual(key);
  await blob.upload('{"v":3}', 7);
  expect(blobDownloadKey('c', 'uploads/invoice-7.json', (await download(blob)).response)).not.toEqual(key);
});

test('refused without a version: a response with neither versionId nor etag, or an empty path', () => {
  expect(() => blobDownloadKey('c', 'uploads/a', {})).toThrow(/neither versionId nor etag/);
  expect(() => blobDownloadKey('c', '', { etag: '"0x1"' })).toThrow(/path/);
  expect(blobDownloadKey('c', 'uploads/a', { versionId: '2026-12-03T10:00:00.0000000Z', etag: '"0x1"' }).key).toContain('versionId');
});
