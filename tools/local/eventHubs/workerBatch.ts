import type { RpcInvocationRequest, RpcTypedData, WorkerHost } from '../host/WorkerHost';
import type { BatchHandler } from './LocalEventHubsHost';

/** How the host hands the events' bodies to the Node worker: as strings (the default) or as bytes (`dataType: 'binary'`). */
export type BatchDataType = 'string' | 'binary';

/**
 * A `cardinality: 'many'` batch as the Functions host sends it to the Node worker: the bodies as one typed collection
 * (strings or bytes), the trigger metadata with the extension's PascalCase names as JSON; `@azure/functions` then
 * parses the texts and camel-cases the metadata, which is what the handler sees.
 */
export function rpcBatchRequest(
  bindingName: string,
  bodies: readonly unknown[],
  metadata: Record<string, unknown>,
  dataType: BatchDataType = 'string',
): RpcInvocationRequest {
  const texts = bodies.map((body) => (typeof body === 'string' ? body : JSON.stringify(body)));
  const data: RpcTypedData =
    dataType === 'string' ? { collectionString: { string: texts } } : { collectionBytes: { bytes: texts.map((t) => new Uint8Array(Buffer.from(t, 'utf8'))) } };
  const triggerMetadata: Record<string, RpcTypedData> = {};
  for (const [name, value] of Object.entries(metadata)) triggerMetadata[pascal(name)] = { json: JSON.stringify(pascalKeys(value)) };
  return { inputData: [{ name: bindingName, data }], triggerMetadata };
}

/** A local Event Hubs handler that invokes `functionName` of `worker` (the app's registration) as the worker would. */
export function workerBatchHandler(worker: WorkerHost, functionName: string, dataType: BatchDataType = 'string'): BatchHandler {
  const bindingName = worker.bindingName(functionName, 'eventHubTrigger');
  return (bodies, context) => worker.invoke(functionName, rpcBatchRequest(bindingName, bodies, context.triggerMetadata, dataType));
}

const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/** The extension's object fields are PascalCase (`PartitionContext.PartitionId`); application properties are as sent. */
function pascalKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value;
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [pascal(k), v]));
}
