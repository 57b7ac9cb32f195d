import { DefaultAzureCredential } from '@azure/identity';
import { ServiceBusClient, type ServiceBusSender } from '@azure/service-bus';
import type { Settings } from '../config/settings';
import { ConfigurationError } from 'azure-functions-idempotency';
import type { PaymentQueue } from '../http/paymentsApi';
import { shardLayoutOf, shardOf, shardQueue } from '../payments/shards';

/**
 * The payments queue as `POST /api/payments` sends to it (the owning shard's queue, `PAYMENT_SHARD_*`): `@azure/service-bus`, `MessageId` = paymentId
 * (the broker's duplicate detection and the payments consumer key on it), JSON body. In Azure with the
 * managed identity on `SERVICEBUS_FULLY_QUALIFIED_NAMESPACE` (Azure Service Bus Data Sender); locally with
 * `SERVICEBUS_CONNECTION_STRING` (the emulator). Creating it sends nothing: the client connects on the
 * first send, so a missing setting only fails the first request (503), never the app's start.
 */
export function serviceBusPaymentQueue(settings: Settings): PaymentQueue {
  const layout = shardLayoutOf(settings);
  let client: ServiceBusClient | undefined;
  const senders = new Map<string, ServiceBusSender>();
  const senderOf = (queue: string): ServiceBusSender => {
    const known = senders.get(queue);
    if (known) return known;
    if (settings.SERVICEBUS_CONNECTION_STRING) client ??= new ServiceBusClient(settings.SERVICEBUS_CONNECTION_STRING);
    else if (settings.SERVICEBUS_FULLY_QUALIFIED_NAMESPACE)
      client ??= new ServiceBusClient(
        settings.SERVICEBUS_FULLY_QUALIFIED_NAMESPACE,
        new DefaultAzureCredential({ managedIdentityClientId: settings.AZURE_CLIENT_ID }),
      );
    else throw new ConfigurationError('set SERVICEBUS_FULLY_QUALIFIED_NAMESPACE (Azure) or SERVICEBUS_CONNECTION_STRING (local) to send payments');
    const sender = client.createSender(queue);
    senders.set(queue, sender);
    return sender;
  };
  return {
    async send(payment, signal) {
      // The queue of the shard that owns the payment (one shard: PAYMENTS_QUEUE_NAME, as before).
      const queue = shardQueue(layout, shardOf(payment.paymentId, layout.count));
      await senderOf(queue).sendMessages({ body: payment, messageId: payment.paymentId, contentType: 'application/json' }, { abortSignal: signal });
    },
  };
}
