import type { Container, CosmosClient, JSONObject, OperationInput } from '@azure/cosmos';
import { StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency';
import { classifyCosmosError, cosmosDomainError, cosmosStatusOf, isRetryableCosmosStatus } from './cosmosErrors';
import type { OrderDocument, OrderPlacement } from './documents';

/** An order as stored, with the ETag every later write is conditional on. */
export interface StoredOrder {
  readonly order: OrderDocument;
  readonly etag: string;
}

/** The answer to {@link OrdersStore.placeOrder}. */
export type PlaceResult =
  /** The batch committed: the order, its lines and the audit entry exist now. */
  | { readonly kind: 'created' }
  /** The order document already existed (409 on the batch's first op); here it is, to compare digests. */
  | { readonly kind: 'exists'; readonly existing: StoredOrder };

/** The answer to a conditional replace. */
export type ReplaceResult = 'replaced' | 'conditionFailed' | 'notFound';

const SYSTEM_PROPERTIES = ['_rid', '_self', '_etag', '_attachments', '_ts'] as const;

/**
 * The orders container (partitioned on `/orderId`; document id of the order = orderId, so the
 * order document is its own dedup marker). Turns every SDK failure into a domain error:
 * 409/412/404 are decisions; network failures, 408, 410, 429, 449 and 5xx are
 * `StoreUnavailableError` (retryable); other statuses `StoreRequestError`. No raw SDK error escapes.
 *
 * Round trips: a new order is 1 (one transactional batch); a duplicate is 2 (failed batch + read).
 */
export class OrdersStore {
  constructor(readonly container: Container) {}

  /**
   * Writes the order, its lines and the audit entry in ONE transactional batch inside the order's
   * partition, the order document first as `Create`. On the real service the batch is atomic: if
   * the order exists, the first op fails with 409, the others with 424, and nothing is written.
   *
   * When the batch's outcome is unknown (no response, or an error without a status), the order
   * document is read to decide: present -> `exists` (the caller recognises its own write by
   * `writerId`), absent -> `StoreUnavailableError`.
   * @throws StoreUnavailableError (retryable) | StoreRequestError
   */
  async placeOrder(placement: OrderPlacement): Promise<PlaceResult> {
    const partitionKey = placement.order.orderId;
    const create = (doc: object): OperationInput => ({ operationType: 'Create', partitionKey, resourceBody: doc as unknown as JSONObject });
    const operations: OperationInput[] = [create(placement.order), ...placement.lines.map(create), create(placement.audit)];

    let failure: unknown;
    try {
      const response = await this.container.items.batch(operations, partitionKey);
      const results = response.result ?? [];
      const failed = results.findIndex((r) => r.statusCode >= 400);
      if (failed === -1 && results.length === operations.length && !(response.code !== undefined && response.code >= 400)) return { kind: 'created' };
      if (results[0]?.statusCode === 409) return { kind: 'exists', existing: await this.mustRead(partitionKey) };
      // The op that failed the batch (the others say 424 Failed Dependency).
      const cause = results.find((r) => r.statusCode >= 400 && r.statusCode !== 424);
      const status = cause?.statusCode ?? (response.code !== undefined && response.code >= 400 ? response.code : undefined);
      if (status === 409) {
        throw new StoreRequestError(`a line or audit document of order ${JSON.stringify(partitionKey)} exists without its order document`, 'placeOrder', 409);
      }
      if (status !== undefined && !isRetryableCosmosStatus(status)) throw cosmosDomainError({ code: status }, 'placeOrder', status);
      failure = { code: status };
    } catch (error) {
      if (error instanceof StoreRequestError || error instanceof StoreUnavailableError) throw error;
      const status = cosmosStatusOf(error);
      if (status === 409) return { kind: 'exists', existing: await this.mustRead(partitionKey) };
      if (status !== undefined && !isRetryableCosmosStatus(status)) throw cosmosDomainError(error, 'placeOrder', status);
      // The SDK rethrows batch failures as a plain Error without the status: the outcome is unknown.
      failure = error;
    }
    const existing = await this.readOrder(partitionKey);
    if (existing) return { kind: 'exists', existing };
    throw cosmosDomainError(failure, 'placeOrder', cosmosStatusOf(failure));
  }

  /**
   * The order document, or undefined when there is none.
   * @throws StoreUnavailableError | StoreRequestError
   */
  async readOrder(orderId: string): Promise<StoredOrder | undefined> {
    try {
      const response = await this.container.item(orderId, orderId).read<OrderDocument & { _etag?: string }>();
      if (response.statusCode === 404 || !response.resource) return undefined;
      const etag = response.etag ?? response.resource._etag;
      if (!etag) throw new StoreRequestError(`order ${JSON.stringify(orderId)} was read without an ETag`, 'readOrder', response.statusCode);
      return { order: stripSystemProperties(response.resource), etag };
    } catch (error) {
      if (error instanceof StoreRequestError) throw error;
      if (classifyCosmosError(error, 'readOrder') === 'notFound') return undefined;
      throw cosmosDomainError(error, 'readOrder');
    }
  }

  /**
   * Replaces the order document only if it is still at `etag` (If-Match).
   * @returns `conditionFailed` (412) when someone wrote it since it was read; `notFound` when it is gone.
   * @throws StoreUnavailableError | StoreRequestError
   */
  async replaceOrder(order: OrderDocument, etag: string): Promise<ReplaceResult> {
    try {
      await this.container.item(order.id, order.orderId).replace(order, { accessCondition: { type: 'IfMatch', condition: etag } });
      return 'replaced';
    } catch (error) {
      const conflict = classifyCosmosError(error, 'replaceOrder');
      if (conflict === 'exists') throw cosmosDomainError(error, 'replaceOrder');
      return conflict;
    }
  }

  private async mustRead(orderId: string): Promise<StoredOrder> {
    const existing = await this.readOrder(orderId);
    // 409 then 404: the order was deleted in between; nothing is decided, the next delivery decides.
    if (!existing) throw new StoreUnavailableError(`order ${JSON.stringify(orderId)} conflicted on create but could not be read`, 'placeOrder');
    return existing;
  }
}

/**
 * Creates the database and the orders container if absent: partition key `/orderId`,
 * `defaultTtl: -1` (TTL on, nothing expires unless an item sets its own `ttl`). For local runs and
 * tests; in Azure the Bicep templates create them.
 * @throws StoreUnavailableError | StoreRequestError
 */
export async function ensureOrdersContainer(client: CosmosClient, databaseName: string, containerName: string): Promise<Container> {
  try {
    const { database } = await client.databases.createIfNotExists({ id: databaseName });
    const { container } = await database.containers.createIfNotExists({ id: containerName, partitionKey: { paths: ['/orderId'] }, defaultTtl: -1 });
    return container;
  } catch (error) {
    throw cosmosDomainError(error, 'ensureOrdersContainer');
  }
}

function stripSystemProperties<T extends object>(resource: T): T {
  const copy = { ...resource } as Record<string, unknown>;
  for (const name of SYSTEM_PROPERTIES) delete copy[name];
  return copy as T;
}
