/**
 * The ExpirySweeper's options (packages/idempotency/src/stores/table/sweep/ExpirySweeper.ts): the defaults a caller
 * gets and the ConfigurationError it reads at start for a value out of range, at each bound. The constructor only
 * keeps the client (no request is sent), so no table is needed here; what a sweep does is tested on Azurite
 * (test/integration/sweepRun.test.ts, sweepDelete.test.ts, sweepChunking.test.ts).
 */
import type { TableClient } from '@azure/data-tables';
import { ConfigurationError } from 'azure-functions-idempotency';
import { ExpirySweeper, MAX_BATCH_SIZE, MAX_PAGE_SIZE, type HeldKeysSource } from 'azure-functions-idempotency/internal';

const client = { tableName: 'unused' } as unknown as TableClient;
const holds: HeldKeysSource[] = [{ name: 'dead-letter queue', heldKeys: async () => [] }];
const MAX = Number.MAX_SAFE_INTEGER;

test('the defaults: 16 partitions, pages of 1000, transactions of 100, checkpoint row "expiry"', () => {
  const sweeper = new ExpirySweeper(client, { budgetMs: 1 });
  expect(sweeper).toMatchObject({ partitionCount: 16, budgetMs: 1, pageSize: 1000, batchSize: 100, checkpointName: 'expiry' });
  expect([MAX_PAGE_SIZE, MAX_BATCH_SIZE]).toEqual([1000, 100]);
  expect(new ExpirySweeper(client, { budgetMs: MAX, partitionCount: 4, pageSize: 1, batchSize: 1, checkpointName: 'other' })).toMatchObject({
    partitionCount: 4,
    budgetMs: MAX,
    pageSize: 1,
    batchSize: 1,
    checkpointName: 'other',
  });
  expect(new ExpirySweeper(client, { budgetMs: 5, pageSize: 1000, batchSize: 100 })).toMatchObject({ pageSize: 1000, batchSize: 100 });
});

test('each option out of range is refused with its name, its range and the value given', () => {
  const refused = (options: ConstructorParameters<typeof ExpirySweeper>[1]): string => {
    try {
      new ExpirySweeper(client, options);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      return (error as Error).message;
    }
    throw new Error('expected a ConfigurationError');
  };
  expect(refused({ budgetMs: 0 })).toBe(`budgetMs must be an integer from 1 to ${MAX}, got 0`);
  expect(refused({ budgetMs: 1.5 })).toBe(`budgetMs must be an integer from 1 to ${MAX}, got 1.5`);
  expect(refused({ budgetMs: MAX + 2 })).toBe(`budgetMs must be an integer from 1 to ${MAX}, got ${MAX + 2}`);
  expect(refused({ budgetMs: 1, pageSize: 0 })).toBe('pageSize must be an integer from 1 to 1000, got 0');
  expect(refused({ budgetMs: 1, pageSize: 1001 })).toBe('pageSize must be an integer from 1 to 1000, got 1001');
  expect(refused({ budgetMs: 1, batchSize: 0 })).toBe('batchSize must be an integer from 1 to 100, got 0');
  expect(refused({ budgetMs: 1, batchSize: 101 })).toBe('batchSize must be an integer from 1 to 100, got 101');
  expect(refused({ budgetMs: 1, partitionCount: 0 })).toMatch(/partition count/);
});

test('holds need a hold window of at least 1 ms; without holds none is read', () => {
  const refused = (holdMs: number | undefined) => () => new ExpirySweeper(client, { budgetMs: 1, holds, holdMs });
  expect(refused(undefined)).toThrow(new ConfigurationError(`holdMs must be an integer from 1 to ${MAX}, got NaN`));
  expect(refused(0)).toThrow(`holdMs must be an integer from 1 to ${MAX}, got 0`);
  expect(refused(1)).not.toThrow();
  expect(refused(MAX)).not.toThrow();
  expect(() => new ExpirySweeper(client, { budgetMs: 1, holds: [], holdMs: 0 })).not.toThrow();
  expect(() => new ExpirySweeper(client, { budgetMs: 1, holdMs: -5 })).not.toThrow();
});
