import { InvocationContext } from '@azure/functions';
import { keyFromMessageId } from 'azure-functions-idempotency';
import { createCosmosStore, paymentsHandler, type Charge } from '../../examples/cosmosQuickstart';
import { CosmosEmulator } from '../support/cosmos';

let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos?.stop();
});

function delivery(messageId: string, deliveryCount: number): InvocationContext {
  return new InvocationContext({
    invocationId: `c-${deliveryCount}`,
    functionName: 'payments',
    triggerMetadata: { messageId, deliveryCount },
    logHandler: () => {},
  });
}

test('examples/cosmosQuickstart.ts on the Cosmos emulator: charges once per messageId; the redelivery gets the stored result', async () => {
  const store = await createCosmosStore(cosmos.client());
  const calls: string[] = [];
  const charge: Charge = async (payment, key) => {
    calls.push(key);
    return { chargeId: `ch-${payment.paymentId}` };
  };
  const handler = paymentsHandler(store, charge);
  const message = { paymentId: 'pay-c1', amount: 10 };
  expect(await handler(message, delivery('pay-c1', 1))).toEqual({ chargeId: 'ch-pay-c1' });
  expect(await handler(message, delivery('pay-c1', 2))).toEqual({ chargeId: 'ch-pay-c1' });
  expect(calls).toEqual(['pay-c1']);
  expect(await store.get(keyFromMessageId('payments', 'pay-c1'))).toMatchObject({ status: 'COMPLETED', result: { chargeId: 'ch-pay-c1' } });
});
