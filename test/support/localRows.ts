import { odata, type TableClient } from '@azure/data-tables';

/** The local rows of the marker at `address`, read straight from the table: name -> the row's own properties. */
export async function localRowsInTable(client: TableClient, address: { partitionKey: string; rowKey: string }): Promise<Map<string, Record<string, unknown>>> {
  const rows = new Map<string, Record<string, unknown>>();
  const filter = odata`PartitionKey eq ${address.partitionKey} and RowKey gt ${`${address.rowKey}~`} and RowKey lt ${`${address.rowKey}~~`}`;
  for await (const entity of client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
    const own: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(entity)) {
      if (['partitionKey', 'rowKey', 'timestamp', 'etag', 'kind'].includes(name) || name.includes('odata')) continue;
      own[name] = value;
    }
    rows.set(String(entity.rowKey).slice(address.rowKey.length + 1), own);
  }
  return rows;
}
