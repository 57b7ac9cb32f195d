import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as publicApi from '../../src/core/public';

const ROOT = join(__dirname, '..', '..');

describe('the package: azure-idempotent-consumer/core', () => {
  test('the public entry exports exactly the curated runtime names (no internals: rules, rows, Table I/O, caches)', () => {
    expect(Object.keys(publicApi).sort()).toEqual(
      [
        'BatchIncompleteError',
        'BatchParkReason',
        'ConfigurationError',
        'CosmosIdempotencyStore',
        'IdempotencyError',
        'PARKED_RESULT',
        'blobVersionKey',
        'cosmosChangeKey',
        'defaultBatchEventKey',
        'eventGridEventKey',
        'makeIdempotentBatch',
        'storageQueueMessageKey',
        'timerOccurrenceKey',
        'InMemoryIdempotencyStore',
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
        'TableIdempotencyStore',
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
      ].sort(),
    );
    expect(publicApi).not.toHaveProperty('default');
  });

  test('package.json maps ./core to the compiled public entry and its declarations (what npm run build emits)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; default: string }> };
    expect(pkg.exports['./core']).toEqual({ types: './dist/src/core/public.d.ts', default: './dist/src/core/public.js' });
    const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: { declaration?: boolean } };
    expect(build.compilerOptions.declaration).toBe(true);
  });
});
