import type { ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage } from '@azure/service-bus';
import { defaultCredential, optionalPeer } from '../connect/optionalPeer';
import { OperatorUsageError } from '../operatorErrors';
import type { DeadLetteredMessage, DeadLetterQueue } from './DeadLetterQueue';

/** How to reach the queue: a connection string, or the namespace with your Azure identity. */
export interface ServiceBusDeadLetterOptions {
  readonly queueName: string;
  /** A connection string (SAS): a local emulator, or where identities are not used. */
  readonly connectionString?: string;
  /** `<namespace>.servicebus.windows.net`, with `DefaultAzureCredential` (needs `@azure/identity`). */
  readonly fullyQualifiedNamespace?: string;
  /** A user-assigned managed identity's client id, for `DefaultAzureCredential`. */
  readonly managedIdentityClientId?: string;
}

/** Application properties the broker adds when it dead-letters a message: not carried to the copy. */
const DEAD_LETTER_PROPERTIES = new Set(['DeadLetterReason', 'DeadLetterErrorDescription']);

interface Received extends DeadLetteredMessage {
  readonly raw: ServiceBusReceivedMessage;
}

/**
 * The dead-letter sub-queue of a Service Bus queue as a {@link DeadLetterQueue} (`@azure/service-bus`, an optional
 * peer, loaded only now; `@azure/identity` only without a connection string). The identity needs to receive from the
 * dead-letter queue and send to the queue: "Azure Service Bus Data Owner" on the queue (or Data Receiver and Data
 * Sender).
 *
 * Messages are received with `skipParsingBodyAsJson`, so a body sent as bytes is resent as the same bytes (not parsed
 * JSON re-encoded as an AMQP value). The copy carries the body, MessageId, content type, correlation id, subject,
 * session id, partition key, reply-to and the application properties (without the broker's `DeadLetterReason` and
 * `DeadLetterErrorDescription`); it gets the queue's default time to live.
 * @throws OperatorUsageError when neither a connection string nor a namespace is given, or a package is missing
 */
export async function serviceBusDeadLetterQueue(options: ServiceBusDeadLetterOptions): Promise<DeadLetterQueue> {
  const bus = await optionalPeer(() => import('@azure/service-bus'), '@azure/service-bus', 'a dead-letter replay');
  let client: ServiceBusClient;
  if (options.connectionString) client = new bus.ServiceBusClient(options.connectionString);
  else if (options.fullyQualifiedNamespace)
    client = new bus.ServiceBusClient(options.fullyQualifiedNamespace, await defaultCredential('Service Bus', options.managedIdentityClientId));
  else throw new OperatorUsageError('a dead-letter replay needs --servicebus-namespace (your identity) or --servicebus-connection-string');
  const receiver = client.createReceiver(options.queueName, { subQueueType: 'deadLetter', receiveMode: 'peekLock', skipParsingBodyAsJson: true });
  const sender = client.createSender(options.queueName);
  const wrap = (raw: ServiceBusReceivedMessage): Received => ({
    messageId: raw.messageId,
    sequenceNumber: String(raw.sequenceNumber ?? ''),
    enqueuedAtMs: raw.enqueuedTimeUtc?.getTime(),
    deadLetterReason: raw.deadLetterReason,
    raw,
  });
  const rawOf = (message: DeadLetteredMessage): ServiceBusReceivedMessage => (message as Received).raw;
  return {
    queueName: options.queueName,
    receive: async (maxMessages, maxWaitMs) => (await receiver.receiveMessages(maxMessages, { maxWaitTimeInMs: maxWaitMs })).map(wrap),
    peek: async (maxMessages) => (await receiver.peekMessages(maxMessages)).map(wrap),
    complete: (message) => receiver.completeMessage(rawOf(message)),
    abandon: (message) => receiver.abandonMessage(rawOf(message)),
    resend: (message) => sender.sendMessages(copyOf(rawOf(message))),
    close: async () => {
      await receiver.close();
      await sender.close();
      await client.close();
    },
  };
}

/** The copy of a dead-lettered message that is sent back to its queue (same MessageId). */
export function copyOf(raw: ServiceBusReceivedMessage): ServiceBusMessage {
  const applicationProperties = Object.fromEntries(Object.entries(raw.applicationProperties ?? {}).filter(([name]) => !DEAD_LETTER_PROPERTIES.has(name)));
  return {
    body: raw.body as unknown,
    messageId: raw.messageId,
    contentType: raw.contentType,
    correlationId: raw.correlationId,
    subject: raw.subject,
    sessionId: raw.sessionId,
    partitionKey: raw.partitionKey,
    replyTo: raw.replyTo,
    replyToSessionId: raw.replyToSessionId,
    to: raw.to,
    applicationProperties,
  };
}
