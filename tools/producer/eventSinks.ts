import { DefaultAzureCredential } from '@azure/identity';
import { EventHubProducerClient } from '@azure/event-hubs';
import type { LocalEventHub } from '../local/eventHubs/LocalEventHub';
import type { PlannedEvent } from './rewardEvents';

/** Where the rewards producer sends: one call per planned event, in order (a retry is its own send). */
export interface EventSink {
  readonly description: string;
  send(event: PlannedEvent): Promise<void>;
  close(): Promise<void>;
}

/** The local Event Hubs of the tests and the demo (in process): each send appends, a retry appends again. */
export function localHubSink(hub: LocalEventHub): EventSink {
  return {
    description: `local hub ${hub.name} (${hub.partitionCount} partitions)`,
    send: async (event) => void hub.send(event.body, { partitionKey: event.partitionKey, properties: { ...event.properties } }),
    close: async () => undefined,
  };
}

/** Where an Azure hub is: a namespace with Microsoft Entra ID (DefaultAzureCredential), or a connection string (the emulator). */
export type AzureHubTarget =
  | { readonly kind: 'identity'; readonly fullyQualifiedNamespace: string; readonly hub: string }
  | { readonly kind: 'connectionString'; readonly connectionString: string; readonly hub: string };

/**
 * An Azure Event Hub (or the emulator, by connection string): one `sendBatch` per planned event, with its partition
 * key (a retry is a second send). Needs Azure Event Hubs Data Sender on the hub (infra/main.bicep gives the deployer).
 */
export function azureHubSink(target: AzureHubTarget): EventSink {
  const client =
    target.kind === 'identity'
      ? new EventHubProducerClient(target.fullyQualifiedNamespace, target.hub, new DefaultAzureCredential())
      : new EventHubProducerClient(target.connectionString, target.hub);
  return {
    description: target.kind === 'identity' ? `${target.fullyQualifiedNamespace}/${target.hub}` : `hub ${target.hub} (connection string)`,
    async send(event) {
      const structured = Object.keys(event.properties).length === 0;
      await client.sendBatch(
        [{ body: event.body, properties: { ...event.properties }, contentType: structured ? 'application/cloudevents+json' : 'application/json' }],
        { partitionKey: event.partitionKey },
      );
    },
    close: () => client.close(),
  };
}
