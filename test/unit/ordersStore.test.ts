import type { Container } from '@azure/cosmos';
import { StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { buildPlacement, OrdersStore, orderPlacedSchema, type OrderDocument } from '../../src/orders';

const placed = orderPlacedSchema.parse({ orderId: 'o-1', customerId: 'c', items: [{ sku: 'A', quantity: 1, unitPrice: 5 }], currency: 'EUR' });
const placement = buildPlacement(placed, { consumer: 'orders', digest: 'd1', writerId: 'w1' }, { messageId: 'o-1' }, 1_800_000_000_000, 60);

/** A stand-in container: `batch` answers with the given behaviour; `read` returns `stored` (or 404). */
function stubContainer(batch: () => Promise<unknown>, stored?: OrderDocument): Container {
  return {
    items: { batch },
    item: () => ({
      read: async () => (stored ? { statusCode: 200, resource: { ...stored, _etag: 'e1', _ts: 1 }, etag: 'e1' } : { statusCode: 404, resource: undefined }),
    }),
  } as unknown as Container;
}
const results =
  (...codes: number[]) =>
  async () => ({ code: 200, result: codes.map((statusCode) => ({ statusCode, requestCharge: 1 })) });

describe('OrdersStore.placeOrder: every Cosmos answer becomes a decision or a domain error', () => {
  test('all ops 201: created, in one round trip', async () => {
    await expect(new OrdersStore(stubContainer(results(201, 201, 201))).placeOrder(placement)).resolves.toEqual({ kind: 'created' });
  });

  test('409 on the order op: exists, with the stored order (system properties stripped) and its etag', async () => {
    const result = await new OrdersStore(stubContainer(results(409, 424, 424), placement.order)).placeOrder(placement);
    expect(result).toEqual({ kind: 'exists', existing: { order: placement.order, etag: 'e1' } });
  });

  test.each([429, 408, 449, 503])('%i on an op: StoreUnavailableError (retryable)', async (code) => {
    await expect(new OrdersStore(stubContainer(results(424, code, 424))).placeOrder(placement)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  test('400 or 403 on an op: StoreRequestError (not retryable)', async () => {
    await expect(new OrdersStore(stubContainer(results(400, 424, 424))).placeOrder(placement)).rejects.toBeInstanceOf(StoreRequestError);
    await expect(new OrdersStore(stubContainer(results(424, 403, 424))).placeOrder(placement)).rejects.toBeInstanceOf(StoreRequestError);
  });

  test('409 on a line while the order op passed: an inconsistent partition, StoreRequestError', async () => {
    await expect(new OrdersStore(stubContainer(results(424, 409, 424))).placeOrder(placement)).rejects.toBeInstanceOf(StoreRequestError);
  });

  test('a thrown 409 (HTTP-level batch failure) is read as exists', async () => {
    const thrown = async () => Promise.reject(Object.assign(new Error('conflict'), { code: 409 }));
    await expect(new OrdersStore(stubContainer(thrown, placement.order)).placeOrder(placement)).resolves.toMatchObject({ kind: 'exists' });
  });

  test('an error without a status (the SDK rethrows batch failures as plain Errors): the order is read to decide', async () => {
    const plain = async () => Promise.reject(new Error('Batch request error: socket hang up'));
    await expect(new OrdersStore(stubContainer(plain, placement.order)).placeOrder(placement)).resolves.toMatchObject({ kind: 'exists' });
    const failure = await new OrdersStore(stubContainer(plain)).placeOrder(placement).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as Error).message).not.toContain('socket hang up');
  });
});

describe('orderPlacedSchema', () => {
  const good = { orderId: 'o', customerId: 'c', items: [{ sku: 'A', quantity: 1, unitPrice: 0 }], currency: 'USD' };
  test.each([
    ['an id with a slash', { ...good, orderId: 'a/b' }],
    ['a blank customer id', { ...good, customerId: '  ' }],
    ['99 items (a batch holds 100 ops)', { ...good, items: Array.from({ length: 99 }, () => good.items[0]) }],
    ['a fractional quantity', { ...good, items: [{ sku: 'A', quantity: 1.5, unitPrice: 1 }] }],
    ['a negative price', { ...good, items: [{ sku: 'A', quantity: 1, unitPrice: -1 }] }],
    ['a total beyond the safe integer range', { ...good, items: [{ sku: 'A', quantity: 2, unitPrice: Number.MAX_SAFE_INTEGER }] }],
  ])('rejects %s', (_, body) => {
    expect(orderPlacedSchema.safeParse(body).success).toBe(false);
  });
  test('accepts a valid order with a zero price', () => {
    expect(orderPlacedSchema.safeParse(good).success).toBe(true);
  });
});
