import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as publicApi from 'azure-functions-idempotency';
import * as cosmos from 'azure-functions-idempotency/cosmos';
import * as memory from 'azure-functions-idempotency/memory';
import * as operator from 'azure-functions-idempotency/operator';
import * as table from 'azure-functions-idempotency/table';

const PACKAGE = join(__dirname, '..', '..', 'packages', 'idempotency');

describe('the package: azure-functions-idempotency', () => {
  test('the main entry exports exactly the curated runtime names (no stores, no internals: rules, rows, Table I/O, caches)', () => {
    expect(Object.keys(publicApi).sort()).toEqual(
      [
        'BatchIncompleteError',
        'BatchParkReason',
        'ConfigurationError',
        'IdempotencyError',
        'PARKED_RESULT',
        'blobVersionKey',
        'blobDownloadKey',
        'cosmosChangeKey',
        'defaultBatchEventKey',
        'eventGridEventKey',
        'makeIdempotentBatch',
        'storageQueueMessageKey',
        'timerOccurrenceKey',
        'InvalidKeyError',
        'InvalidPayloadError',
        'KeyInProgressError',
        'KeyReusedError',
        'LeaseHeartbeat',
        'LeaseLostError',
        'MAX_CONSUMER_LENGTH',
        'MAX_KEY_LENGTH',
        'RecordStatus',
        'ResultTooLargeError',
        'StoreRequestError',
        'StoreUnavailableError',
        'UnknownRecordStatusError',
        'defaultInvocationKey',
        'getIdempotencyScope',
        'keyFromBusinessKey',
        'keyFromCloudEvent',
        'keyFromMessageId',
        'makeIdempotent',
        'payloadDigest',
        'scopedKeyString',
        'systemClock',
        // For a consumer's own storage calls beside the store, and its own keyOf from trigger metadata.
        'withDeadline',
        'DEFAULT_STORE_TIMEOUT_MS',
        'conflictOfStatus',
        'assertMetadataNotFromBody',
      ].sort(),
    );
    expect(publicApi).not.toHaveProperty('default');
  });

  test('each store is its own subpath, exporting its store (the Table one also its expiry sweep and SDK error mapping, for your own Table calls)', () => {
    expect(Object.keys(table).sort()).toEqual(['ExpirySweeper', 'TableIdempotencyStore', 'classifyStoreError', 'toDomainError']);
    expect(Object.keys(cosmos)).toEqual(['CosmosIdempotencyStore']);
    expect(Object.keys(memory)).toEqual(['InMemoryIdempotencyStore']);
  });

  test("the operator's console is its own subpath: the library functions, both stores' records, the CLI and its errors", () => {
    expect(Object.keys(operator).sort()).toEqual(
      [
        'COSMOS_ROLES',
        'ExitCode',
        'LIST_BOUNDS',
        'OPERATOR_RELEASE_PREFIX',
        'OperatorPermissionError',
        'OperatorRefusal',
        'OperatorRefusedError',
        'OperatorUsageError',
        'REPLAY_CONSUMER',
        'RecordState',
        'ReplayAction',
        'TABLE_ROLES',
        'connectRecords',
        'cosmosRecords',
        'evictRecord',
        'inspectRecord',
        'listRecords',
        'recordState',
        'releaseRecord',
        'replayDeadLetters',
        'replayDecision',
        'runOperatorCli',
        'serviceBusDeadLetterQueue',
        'tableRecords',
      ].sort(),
    );
  });

  test('package.json maps every subpath to its compiled entry and declarations; only built files and docs ship', () => {
    const pkg = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; default: string }>;
      bin: Record<string, string>;
      files: string[];
      dependencies?: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional: boolean }>;
    };
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    for (const store of ['table', 'cosmos', 'memory'])
      expect(pkg.exports[`./${store}`]).toEqual({ types: `./dist/stores/${store}/index.d.ts`, default: `./dist/stores/${store}/index.js` });
    // bin/: the console's entry, a file that exists before the build so npm links it in a fresh clone (issue 63).
    expect(pkg.files).toEqual(['bin/azure-functions-idempotency.js', 'dist/**/*.js', 'dist/**/*.d.ts', 'README.md', 'CHANGELOG.md', 'LICENSE']);
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.exports['./operator']).toEqual({ types: './dist/operator/index.d.ts', default: './dist/operator/index.js' });
    expect(pkg.bin).toEqual({ 'azure-functions-idempotency': 'bin/azure-functions-idempotency.js' });
    // Every peer optional: the console loads identity and Service Bus only when a command needs them.
    expect(pkg.peerDependenciesMeta).toEqual({
      '@azure/cosmos': { optional: true },
      '@azure/data-tables': { optional: true },
      '@azure/identity': { optional: true },
      '@azure/service-bus': { optional: true },
    });
    const build = JSON.parse(readFileSync(join(PACKAGE, 'tsconfig.json'), 'utf8')) as { compilerOptions: { declaration?: boolean; outDir: string } };
    expect(build.compilerOptions).toMatchObject({ declaration: true, outDir: 'dist' });
  });
});
