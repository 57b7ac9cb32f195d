import { InvocationContext } from '@azure/functions';
import { StoreRequestError } from 'azure-functions-idempotency';
import { createStore, paymentsHandler, type Charge } from '../../examples/quickstart';
import { useAzurite } from '../support/azurite';

const azuriteOf = useAzurite();

function delivery(messageId: string, deliveryCount: number): InvocationContext {
  return new InvocationContext({
    invocationId: `q-${deliveryCount}`,
    functionName: 'payments',
    triggerMetadata: { messageId, deliveryCount },
    logHandler: () => {},
  });
}

describe('examples/quickstart.ts against Azurite', () => {
  test('the quickstart handler charges once per messageId; its redelivery gets the stored result', async () => {
    const store = await createStore(azuriteOf().connectionString, { allowInsecureConnection: true });
    const calls: string[] = [];
    const charge: Charge = async (payment, key) => {
      calls.push(key);
      return { chargeId: `ch-${payment.paymentId}` };
    };
    const handler = paymentsHandler(store, charge);
    const message = { paymentId: 'pay-q1', amount: 10 };
    expect(await handler(message, delivery('pay-q1', 1))).toEqual({ chargeId: 'ch-pay-q1' });
    expect(await handler(message, delivery('pay-q1', 2))).toEqual({ chargeId: 'ch-pay-q1' });
    expect(calls).toEqual(['pay-q1']);
  });

  test('a TableClient to Azurite without allowInsecureConnection fails with a message naming that option (not retryable)', async () => {
    const error = await createStore(azuriteOf().connectionString).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreRequestError);
    expect((error as StoreRequestError).message).toMatch(/allowInsecureConnection: true/);
    expect((error as StoreRequestError).message).toMatch(/nothing was sent/);
    expect((error as StoreRequestError).retryable).toBe(false);
  });
});
