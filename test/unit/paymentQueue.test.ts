import { ServiceBusClient, type ServiceBusMessage, type ServiceBusSender } from '@azure/service-bus';
import { ConfigurationError } from 'azure-functions-idempotency';
import { serviceBusPaymentQueue } from '../../src/app/paymentQueue';
import { loadSettings } from '../../src/config/settings';
import { shardOf } from '../../src/payments/shards';

/**
 * The payments queue `POST /api/payments` sends to (src/app/paymentQueue.ts): which namespace and queue a payment goes
 * to and the message the broker's duplicate detection and the consumer key on. No broker: the clients are real
 * `ServiceBusClient`s (creating one connects to nothing), their senders recorded instead of opened.
 */
const CONNECTION = 'Endpoint=sb://bus.example.test/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0';

interface Sent {
  namespace: string;
  client: ServiceBusClient;
  queue: string;
  message: ServiceBusMessage;
  signal: AbortSignal | undefined;
}

function recordSends() {
  const sent: Sent[] = [];
  const senders: Array<{ client: ServiceBusClient; queue: string }> = [];
  const spy = jest.spyOn(ServiceBusClient.prototype, 'createSender').mockImplementation(function (this: ServiceBusClient, queue: string) {
    const sender = { client: this, queue };
    senders.push(sender);
    return {
      sendMessages: async (message: ServiceBusMessage, options?: { abortSignal?: AbortSignal }) =>
        void sent.push({ namespace: sender.client.fullyQualifiedNamespace, client: sender.client, queue, message, signal: options?.abortSignal }),
    } as unknown as ServiceBusSender;
  });
  return { sent, senders, spy };
}

afterEach(() => jest.restoreAllMocks());

const settingsOf = (env: Record<string, string>) => loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', ...env });
const payment = (paymentId: string) => ({ paymentId, customerId: 'cust-1', amount: 500, currency: 'EUR' });

describe('serviceBusPaymentQueue', () => {
  test('without a namespace or a connection string: created without error, and the first send refuses naming both settings', async () => {
    const r = recordSends();
    const queue = serviceBusPaymentQueue(settingsOf({}));
    const refused = queue.send(payment('pay-1'), new AbortController().signal);
    await expect(refused).rejects.toThrow(ConfigurationError);
    await expect(refused).rejects.toThrow('set SERVICEBUS_FULLY_QUALIFIED_NAMESPACE (Azure) or SERVICEBUS_CONNECTION_STRING (local) to send payments');
    expect(r.senders).toEqual([]);
  });

  test('with a connection string: one message to PAYMENTS_QUEUE_NAME, MessageId the paymentId, the payment as JSON, the request signal passed on', async () => {
    const r = recordSends();
    const queue = serviceBusPaymentQueue(settingsOf({ SERVICEBUS_CONNECTION_STRING: CONNECTION, PAYMENTS_QUEUE_NAME: 'payments-in' }));
    const signal = new AbortController().signal;
    await queue.send(payment('pay-1'), signal);
    expect(r.sent).toEqual([
      {
        namespace: 'bus.example.test',
        client: expect.any(ServiceBusClient),
        queue: 'payments-in',
        message: { body: payment('pay-1'), messageId: 'pay-1', contentType: 'application/json' },
        signal,
      },
    ]);
  });

  test('the connection string wins over a namespace; a second send reuses the client and the sender', async () => {
    const r = recordSends();
    const queue = serviceBusPaymentQueue(
      settingsOf({ SERVICEBUS_CONNECTION_STRING: CONNECTION, SERVICEBUS_FULLY_QUALIFIED_NAMESPACE: 'other.servicebus.windows.net' }),
    );
    await queue.send(payment('pay-1'), new AbortController().signal);
    await queue.send(payment('pay-2'), new AbortController().signal);
    expect(r.sent.map((s) => [s.namespace, s.queue, s.message.messageId])).toEqual([
      ['bus.example.test', 'payments', 'pay-1'],
      ['bus.example.test', 'payments', 'pay-2'],
    ]);
    expect(r.senders).toHaveLength(1);
  });

  test('in Azure (a namespace, no connection string): the client is on that namespace', async () => {
    const r = recordSends();
    const queue = serviceBusPaymentQueue(settingsOf({ SERVICEBUS_FULLY_QUALIFIED_NAMESPACE: 'sb-pay.servicebus.windows.net', AZURE_CLIENT_ID: 'client-1' }));
    await queue.send(payment('pay-1'), new AbortController().signal);
    expect(r.sent.map((s) => [s.namespace, s.queue])).toEqual([['sb-pay.servicebus.windows.net', 'payments']]);
  });

  test("sharded: each payment goes to its owner shard's queue, one sender a queue, all on one client", async () => {
    const r = recordSends();
    const settings = settingsOf({
      SERVICEBUS_CONNECTION_STRING: CONNECTION,
      PAYMENT_SHARD_COUNT: '3',
      PAYMENT_SHARD_INDEX: '1',
      PAYMENTS_QUEUE_NAME: 'pay-q-1',
    });
    const queue = serviceBusPaymentQueue(settings);
    const ids = Array.from({ length: 12 }, (_, i) => `pay-${i}`);
    for (const id of ids) await queue.send(payment(id), new AbortController().signal);
    expect(r.sent.map((s) => [s.message.messageId, s.queue])).toEqual(ids.map((id) => [id, `pay-q-${shardOf(id, 3)}`]));
    expect(new Set(ids.map((id) => shardOf(id, 3))).size).toBe(3);
    expect(r.senders.map((s) => s.queue).sort()).toEqual(['pay-q-0', 'pay-q-1', 'pay-q-2']);
    expect(new Set(r.senders.map((s) => s.client)).size).toBe(1);
  });
});
