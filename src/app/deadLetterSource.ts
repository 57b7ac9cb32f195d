import { DefaultAzureCredential } from '@azure/identity';
import { ServiceBusClient } from '@azure/service-bus';
import type { Settings } from '../config/settings';
import { deadLetterKeysSource, MAX_HELD_DEAD_LETTERS } from '../lifecycle/deadLetterKeys';
import type { HeldKeysSource } from 'azure-functions-idempotency/table';
import { PAYMENTS_CONSUMER } from '../payments/PaymentsConsumer';

/**
 * The payments dead-letter queue as the expiry sweep's hold (`HeldKeysSource`): the records of dead-lettered payments
 * are kept until an operator resolves the message (resubmits or deletes it). Peeks with the managed identity on
 * `SERVICEBUS_FULLY_QUALIFIED_NAMESPACE` (the identity's Azure Service Bus Data Owner on the queue covers its
 * dead-letter sub-queue), or `SERVICEBUS_CONNECTION_STRING` locally. One client per sweep run, closed after it.
 * @returns undefined when neither setting is there (e.g. `func start` without Service Bus): the sweep then holds nothing.
 */
export function paymentsDeadLetterSource(settings: Settings): HeldKeysSource | undefined {
  const connect = (): ServiceBusClient | undefined => {
    if (settings.SERVICEBUS_CONNECTION_STRING) return new ServiceBusClient(settings.SERVICEBUS_CONNECTION_STRING);
    if (settings.SERVICEBUS_FULLY_QUALIFIED_NAMESPACE)
      return new ServiceBusClient(
        settings.SERVICEBUS_FULLY_QUALIFIED_NAMESPACE,
        new DefaultAzureCredential({ managedIdentityClientId: settings.AZURE_CLIENT_ID }),
      );
    return undefined;
  };
  if (!settings.SERVICEBUS_CONNECTION_STRING && !settings.SERVICEBUS_FULLY_QUALIFIED_NAMESPACE) return undefined;
  return deadLetterKeysSource({
    name: `${settings.PAYMENTS_QUEUE_NAME} dead-letter queue`,
    consumer: PAYMENTS_CONSUMER,
    maxMessages: MAX_HELD_DEAD_LETTERS,
    open: async () => {
      const client = connect()!;
      const receiver = client.createReceiver(settings.PAYMENTS_QUEUE_NAME, { subQueueType: 'deadLetter' });
      return {
        peek: (maxMessages) => receiver.peekMessages(maxMessages),
        close: async () => {
          await receiver.close();
          await client.close();
        },
      };
    },
  });
}
