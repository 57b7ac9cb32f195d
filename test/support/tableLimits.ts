import { RestError, type PipelinePolicy, type PipelineRequest } from '@azure/core-rest-pipeline';
import type { TableClient } from '@azure/data-tables';

/**
 * Azure's Table service limits that Azurite does not hold (it measures an entity in UTF-8 and accepts far more),
 * checked on every entity a TableClient sends, so that a row Azure would refuse fails the test here too.
 *
 * Source: "Understanding the Table service data model"
 * (https://learn.microsoft.com/rest/api/storageservices/understanding-the-table-service-data-model) and its size
 * formula: an entity is `4 bytes + Len(PartitionKey + RowKey) x 2 bytes + for each property (8 bytes +
 * Len(name) x 2 bytes + Sizeof(value))`, where Sizeof is: String 4 + 2 a character (UTF-16 code units), Binary
 * 4 + its bytes, Int32 4, Int64 8, Double 8, DateTime 8, Guid 16, Boolean 1. At most 1 MiB an entity, 252
 * properties besides PartitionKey, RowKey and Timestamp, a name of 255 characters, a string of 32 K characters
 * (64 KiB), a binary of 64 KiB, a key of 1 KiB; an entity-group transaction at most 100 operations, 4 MiB, one
 * partition.
 */
export const TABLE_LIMITS = {
  entityBytes: 1024 * 1024,
  properties: 252,
  propertyNameChars: 255,
  stringChars: 32 * 1024,
  binaryBytes: 64 * 1024,
  keyChars: 1024,
  batchOperations: 100,
  batchBytes: 4 * 1024 * 1024,
} as const;

/** A limit an entity or a transaction broke, as the check saw it. */
export interface TableLimitViolation {
  readonly table: string;
  readonly what: string;
}

const SYSTEM = new Set(['PartitionKey', 'RowKey', 'Timestamp']);
const FIXED: Record<string, number> = { 'Edm.Int32': 4, 'Edm.Int64': 8, 'Edm.Double': 8, 'Edm.DateTime': 8, 'Edm.Guid': 16, 'Edm.Boolean': 1 };

/** The entity's size by the documented formula, and what it breaks beside its size. */
export function entitySize(entity: Record<string, unknown>): { bytes: number; problems: string[] } {
  const problems: string[] = [];
  const pk = String(entity.PartitionKey ?? '');
  const rk = String(entity.RowKey ?? '');
  for (const [name, key] of [
    ['PartitionKey', pk],
    ['RowKey', rk],
  ] as const) {
    if (key.length > TABLE_LIMITS.keyChars) problems.push(`${name} of ${key.length} characters (at most ${TABLE_LIMITS.keyChars})`);
    if (/[/\\#?\u0000-\u001f\u007f-\u009f]/.test(key)) problems.push(`${name} holds a character the service refuses`);
  }
  let bytes = 4 + (pk.length + rk.length) * 2;
  let properties = 0;
  for (const [name, value] of Object.entries(entity)) {
    if (SYSTEM.has(name) || name.includes('@odata.') || name.startsWith('odata.')) continue;
    properties++;
    if (name.length > TABLE_LIMITS.propertyNameChars) problems.push(`property name of ${name.length} characters`);
    const type = entity[`${name}@odata.type`] as string | undefined;
    bytes += 8 + name.length * 2 + valueSize(name, value, type, problems);
  }
  if (properties > TABLE_LIMITS.properties) problems.push(`${properties} properties (at most ${TABLE_LIMITS.properties})`);
  if (bytes > TABLE_LIMITS.entityBytes) problems.push(`entity of ${bytes} bytes by the service's formula (at most ${TABLE_LIMITS.entityBytes})`);
  return { bytes, problems };
}

function valueSize(name: string, value: unknown, type: string | undefined, problems: string[]): number {
  if (value === null) return 0;
  if (type === 'Edm.Binary') {
    const length = Buffer.from(String(value), 'base64').length;
    if (length > TABLE_LIMITS.binaryBytes) problems.push(`binary property ${name} of ${length} bytes (at most ${TABLE_LIMITS.binaryBytes})`);
    return 4 + length;
  }
  if (type && type in FIXED) return FIXED[type];
  if (typeof value === 'boolean') return 1;
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) < 2 ** 31 ? 4 : 8;
  const text = String(value);
  if (text.length > TABLE_LIMITS.stringChars) problems.push(`string property ${name} of ${text.length} characters (at most ${TABLE_LIMITS.stringChars})`);
  return 4 + text.length * 2;
}

/** The entities of a request body: one JSON entity, or the JSON parts of a `$batch` multipart body. */
function entitiesOf(request: PipelineRequest): { entities: Array<Record<string, unknown>>; operations: number; bytes: number } | undefined {
  const body = typeof request.body === 'string' ? request.body : undefined;
  if (body === undefined) return undefined;
  const bytes = Buffer.byteLength(body, 'utf8');
  if (request.url.includes('$batch')) {
    const operations = (body.match(/^(POST|PUT|PATCH|MERGE|DELETE) /gm) ?? []).length;
    const lines = body.split('\n').map((line) => line.replace(/\r$/, ''));
    const entities = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
    return { entities, operations, bytes };
  }
  if (!['POST', 'PUT', 'PATCH', 'MERGE'].includes(request.method) || !body.startsWith('{')) return undefined;
  const entity = JSON.parse(body) as Record<string, unknown>;
  if ('TableName' in entity) return undefined; // createTable
  return { entities: [entity], operations: 1, bytes };
}

/**
 * A pipeline policy that measures every entity the client sends and answers what Azure answers (400) to one
 * over a limit, recording it in `violations`. Add it with {@link withTableLimits}.
 */
export function tableLimitsPolicy(table: string, violations: TableLimitViolation[]): PipelinePolicy {
  return {
    name: 'azureTableLimits',
    sendRequest: async (request, next) => {
      const sent = entitiesOf(request);
      if (sent) {
        const problems: string[] = [];
        if (sent.operations > TABLE_LIMITS.batchOperations) problems.push(`transaction of ${sent.operations} operations`);
        if (request.url.includes('$batch') && sent.bytes > TABLE_LIMITS.batchBytes) problems.push(`transaction of ${sent.bytes} bytes`);
        for (const entity of sent.entities) problems.push(...entitySize(entity).problems);
        if (problems.length > 0) {
          for (const what of problems) violations.push({ table, what });
          throw new RestError(`Azure would refuse this request (${problems.join('; ')})`, { statusCode: 400, code: 'EntityTooLarge', request });
        }
      }
      return next(request);
    },
  };
}

/** Every violation any client with the check saw, in this test file (a test may assert it is empty). */
export const tableLimitViolations: TableLimitViolation[] = [];

/** Adds the check of Azure's Table limits to `client` (once); returns it. */
export function withTableLimits<T extends TableClient>(client: T): T {
  const policies = (client.pipeline.getOrderedPolicies?.() ?? []) as Array<{ name: string }>;
  if (!policies.some((policy) => policy.name === 'azureTableLimits')) client.pipeline.addPolicy(tableLimitsPolicy(client.tableName, tableLimitViolations));
  return client;
}
