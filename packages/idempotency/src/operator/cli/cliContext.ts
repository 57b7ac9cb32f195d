import { userInfo } from 'node:os';
import type { Clock } from '../../protocol/clock';
import { DEFAULT_STORE_TIMEOUT_MS } from '../../protocol/deadline';
import type { ConnectedRecords, StoreConnection } from '../connect/connectRecords';
import { OperatorUsageError, type OperatorPermissionError } from '../operatorErrors';
import type { ConsumerExtension } from '../recordState';
import type { DeadLetterQueue } from '../replay/DeadLetterQueue';
import { integer, text, type CliValues } from './cliArgs';

/** What the console runs with besides its command line: where it prints, the environment, the app's extensions. */
export interface OperatorCliIo {
  /** Settings by the app's names (IDEMPOTENCY_TABLE_CONNECTION_STRING, COSMOS_ENDPOINT...); default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** A line to standard output (records, reports); default `process.stdout`. */
  readonly out?: (line: string) => void;
  /** A line to standard error (progress, audit, errors); default `process.stderr`. */
  readonly err?: (line: string) => void;
  /** The app's consumer extensions (payments: the run's status, the Payment row). */
  readonly extensions?: readonly ConsumerExtension[];
  readonly clock?: Clock;
  /** Connects to the records (default: the Table or Cosmos SDK, by the options). */
  readonly connect?: (connection: StoreConnection) => Promise<ConnectedRecords>;
  /** Opens a queue's dead-letter queue (default: Service Bus, by the options); tests pass an in-memory broker. */
  readonly openDeadLetterQueue?: (queueName: string) => Promise<DeadLetterQueue>;
  /** Told a refusal of the identity, to print the role (tests). */
  readonly onPermission?: (error: OperatorPermissionError) => void;
}

/** The store connection the options and environment name. @throws OperatorUsageError */
export function connectionOf(values: CliValues, env: Readonly<Record<string, string | undefined>>): StoreConnection {
  const store = text(values, 'store', env.IDEMPOTENCY_STORE) ?? 'table';
  if (store !== 'table' && store !== 'cosmos') throw new OperatorUsageError(`--store must be table or cosmos, got ${JSON.stringify(store)}`);
  return {
    store,
    tableConnectionString: text(values, 'table-connection-string', env.IDEMPOTENCY_TABLE_CONNECTION_STRING),
    tableEndpoint: text(values, 'table-endpoint', env.IDEMPOTENCY_TABLE_ENDPOINT),
    tableName: text(values, 'table', env.IDEMPOTENCY_TABLE_NAME) ?? 'idempotency',
    partitionCount: integer('partitions', text(values, 'partitions', env.IDEMPOTENCY_PARTITION_COUNT), { min: 1, max: 4096, default: 16 }),
    cosmosEndpoint: text(values, 'cosmos-endpoint', env.COSMOS_ENDPOINT),
    cosmosKey: text(values, 'cosmos-key', env.COSMOS_KEY),
    cosmosDatabase: text(values, 'cosmos-database', env.COSMOS_DATABASE_NAME),
    cosmosContainer: text(values, 'cosmos-container', env.COSMOS_IDEMPOTENCY_CONTAINER),
    managedIdentityClientId: text(values, 'client-id', env.AZURE_CLIENT_ID),
    callTimeoutMs: integer('timeout-ms', text(values, 'timeout-ms', env.IDEMPOTENCY_STORE_TIMEOUT_MS), {
      min: 1,
      max: 600_000,
      default: DEFAULT_STORE_TIMEOUT_MS,
    }),
  };
}

/** Who runs the command: `--by`, else the environment's user. */
export function whoOf(values: CliValues, env: Readonly<Record<string, string | undefined>>): string {
  const given = text(values, 'by', env.USER ?? env.USERNAME);
  if (given) return given;
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}
