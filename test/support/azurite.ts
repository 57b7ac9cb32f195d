import { AzuriteTable } from '../../tools/azurite/AzuriteTable';

/** The Azurite launcher lives under tools/ so the demo and bench can use it too; one implementation. */
export { AzuriteTable, freePort } from '../../tools/azurite/AzuriteTable';

/**
 * Starts one Azurite for the test file (beforeAll) and stops it (afterAll).
 * @returns a getter for the running instance.
 */
export function useAzurite(): () => AzuriteTable {
  let azurite: AzuriteTable | undefined;
  beforeAll(async () => {
    azurite = await AzuriteTable.start();
  });
  afterAll(async () => {
    await azurite?.stop();
  });
  return () => {
    if (!azurite) throw new Error('Azurite is not started yet (call inside a test or hook)');
    return azurite;
  };
}
