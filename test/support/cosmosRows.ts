import type { Container } from '@azure/cosmos';

/**
 * The local rows of record `recordId`, read straight from the container: name -> the row's own properties.
 * Filtered in the WHERE clause (the emulator ignores a query's partition-key option).
 */
export async function localRowsInContainer(container: Container, recordId: string): Promise<Map<string, Record<string, unknown>>> {
  const { resources } = await container.items
    .query<{ kind: string; properties: Record<string, unknown> }>({
      query: 'SELECT * FROM c WHERE c.recordId = @recordId AND c.id != @recordId',
      parameters: [{ name: '@recordId', value: recordId }],
    })
    .fetchAll();
  return new Map(resources.map((row) => [row.kind, { ...row.properties }]));
}
