import type * as df from 'durable-functions';

/**
 * Reads of the task hub's instances through the Durable extension's HTTP API, where durable-functions 3.5's client
 * does not do what the app needs: status reads without the instance's input, and the instance query one page at a
 * time (its `getStatusBy` follows every continuation token before it returns: the whole backlog at once).
 */

/** The client's binding data, as durable-functions keeps it (`DurableClient.clientData`; not in its typings). */
interface ClientData {
  readonly rpcBaseUrl?: string;
}

/** The extension's local HTTP endpoint (`rpcBaseUrl`, ends with `/`) of a client, when its binding data has one. */
export function rpcBaseUrlOf(client: df.DurableClient): string | undefined {
  return (client as unknown as { clientData?: ClientData }).clientData?.rpcBaseUrl;
}

/**
 * `getStatus` options that leave the input out. durable-functions 3.5 writes `showInput` into the query on the
 * extension's RPC path only when the value is truthy (`if (options.showInput)`), so `showInput: false` is dropped
 * and the extension's default applies (true: the whole input, the payment and the claim, on every read); on the
 * management-URL path it writes it only when it is a boolean. So: the string `'false'` on the RPC path (written as
 * `showInput=false`), the boolean elsewhere.
 */
export function statusWithoutInput(client: df.DurableClient): df.GetStatusOptions {
  return { showInput: (rpcBaseUrlOf(client) ? 'false' : false) as unknown as boolean };
}

/** An instance's status, or undefined when the extension answers 404 (no such instance: never started, or purged). */
export async function statusOrUnknown(
  client: df.DurableClient,
  instanceId: string,
  options?: df.GetStatusOptions,
): Promise<df.DurableOrchestrationStatus | undefined> {
  try {
    return await client.getStatus(instanceId, options);
  } catch (error) {
    if (/HTTP 404/.test(String((error as Error)?.message))) return undefined;
    throw error;
  }
}

/** The HTTP GET the instance query sends (`fetch`; the simulator answers it as the extension does). */
export type HttpGet = (url: URL, init: { headers: Record<string, string> }) => Promise<Response>;

/** One page of final instances created before a time (the extension's `GET instances/`). */
export interface InstancePage {
  readonly statuses: ReadonlyArray<{ instanceId: string; runtimeStatus: string; input?: unknown }>;
  /** The extension's `x-ms-continuation-token`: pass it for the next page; absent on the last. */
  readonly continuationToken?: string;
}

/**
 * One page (at most `pageSize`) of the instances created before `createdBeforeMs` in `runtimeStatus`, with their
 * inputs, from the extension's RPC endpoint (query `top`, header `x-ms-continuation-token`). Without an RPC
 * endpoint (no `rpcBaseUrl` in the binding data) it falls back to the client's `getStatusBy`: one page of all.
 * @throws Error on an answer other than 200 (the expiry timer's tick fails; the next one resumes)
 */
export async function instancePage(
  client: df.DurableClient,
  filter: {
    createdBeforeMs: number;
    runtimeStatus: readonly df.OrchestrationRuntimeStatus[];
    pageSize: number;
    continuationToken?: string;
    /** Only instance ids starting with this (the extension's `instanceIdPrefix`: a range read, entity rows are not scanned). */
    instanceIdPrefix?: string;
  },
  http: HttpGet = fetch,
): Promise<InstancePage> {
  const base = rpcBaseUrlOf(client);
  if (!base) {
    const all = await client.getStatusBy({
      createdTimeFrom: new Date(0),
      createdTimeTo: new Date(filter.createdBeforeMs),
      runtimeStatus: [...filter.runtimeStatus],
    });
    return { statuses: all.map((s) => ({ instanceId: s.instanceId, runtimeStatus: String(s.runtimeStatus), input: s.input })) };
  }
  const query = [
    `createdTimeFrom=${new Date(0).toISOString()}`,
    `createdTimeTo=${new Date(filter.createdBeforeMs).toISOString()}`,
    `runtimeStatus=${filter.runtimeStatus.join(',')}`,
    `top=${filter.pageSize}`,
    'showInput=true',
    ...(filter.instanceIdPrefix ? [`instanceIdPrefix=${encodeURIComponent(filter.instanceIdPrefix)}`] : []),
  ].join('&');
  const headers: Record<string, string> = filter.continuationToken ? { 'x-ms-continuation-token': filter.continuationToken } : {};
  const answer = await http(new URL(`instances/?${query}`, base), { headers });
  if (answer.status !== 200) throw new Error(`Durable instance query answered HTTP ${answer.status}: ${(await answer.text()).slice(0, 300)}`);
  const statuses = (await answer.json()) as InstancePage['statuses'];
  const token = answer.headers.get('x-ms-continuation-token');
  // A page may hold no rows and still have a token (Azure Tables stops a page at 1,000 rows scanned, 5 s or a
  // partition boundary; DurableTask.AzureStorage answers one storage response per call): only a missing token ends.
  return { statuses, continuationToken: token && token !== 'null' ? token : undefined };
}
