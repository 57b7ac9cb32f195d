import type { RpcTypedData } from '../../tools/local/host/WorkerHost';

/**
 * Trigger data as the Functions host builds it for a Node worker, for tests of the keys (evidence: the host's
 * source, cited per rule). The values go to `WorkerHost` (tools/local/host), which runs them through
 * `@azure/functions`' own conversion (`InvocationModel.getArguments`: `fromRpcTypedData`, then the trigger
 * metadata camel-cased by `toCamelCaseKey`/`toCamelCaseValue`), as the Node worker does.
 *
 * `toRpc` follows `GrpcMessageConversionExtensions.ToRpc` (Azure/azure-functions-host,
 * src/WebJobs.Script.Grpc/MessageExtensions/GrpcMessageConversionExtensions.cs): `byte[]` -> bytes, `string` ->
 * string, `double` -> double, `string[]` -> collectionString without null or empty entries (`ToRpcStringArray`:
 * the Node worker does not declare `IncludeEmptyEntriesInMessagePayload`), `byte[][]` -> collectionBytes (empty
 * entries kept), `long[]` -> collectionSint64, anything else (an int, a long, a DateTime, a dictionary, a POCO) ->
 * json by Json.NET (`ToRpcDefault`). A null value is not sent (`ShouldSkipBindingData`,
 * src/WebJobs.Script.Grpc/Extensions/ScriptInvocationContextExtensions.cs).
 */

/** A .NET value as the host holds it in the binding data: the C# type decides its RPC form. */
export type DotNet =
  | { readonly string: string | null }
  | { readonly bytes: Uint8Array }
  | { readonly strings: ReadonlyArray<string | null> }
  | { readonly bytesArray: readonly Uint8Array[] }
  | { readonly longs: readonly number[] }
  /** Serialised by Json.NET: give the JSON text it writes (e.g. `1`, `"2026-..+00:00"`, `{"ETag":{}}`). */
  | { readonly jsonNet: string };

export function toRpc(value: DotNet): RpcTypedData | undefined {
  if ('string' in value) return value.string === null ? undefined : { string: value.string };
  if ('bytes' in value) return { bytes: value.bytes };
  if ('strings' in value) return { collectionString: { string: value.strings.filter((s): s is string => s !== null && s !== '') } };
  if ('bytesArray' in value) return { collectionBytes: { bytes: value.bytesArray } };
  if ('longs' in value) return { collectionSint64: { sint64: value.longs } } as unknown as RpcTypedData;
  return { json: value.jsonNet };
}

/**
 * `Utility.ApplyBindingData` (src/WebJobs.Script/Utility.cs), run by `WorkerFunctionInvoker.TransformInput` on the
 * trigger input before the invocation is sent: a string input that is a JSON object (`IsJson`: `{`...`}` once
 * trimmed) has its top-level properties, except nulls and arrays, written into the binding data, a dictionary that
 * ignores case (`Binder.BindingData`, Azure/azure-webjobs-sdk, `StringComparer.OrdinalIgnoreCase`): an existing
 * entry keeps its name and takes the body's value; an object as a JObject (json), anything else as `(string)` text.
 * Json.NET's leniencies (comments, single quotes) are not modelled: the bodies here are strict JSON.
 */
export function applyBindingData(bindingData: Record<string, DotNet>, input: DotNet): Record<string, DotNet> {
  const merged = { ...bindingData };
  if (!('string' in input) || input.string === null) return merged;
  const text = input.string.trim();
  if (!(text.startsWith('{') && text.endsWith('}'))) return merged;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return merged;
  }
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (value === null || Array.isArray(value)) continue;
    const existing = Object.keys(merged).find((key) => key.toLowerCase() === name.toLowerCase()) ?? name;
    merged[existing] =
      typeof value === 'object' ? { jsonNet: JSON.stringify(value) } : { string: typeof value === 'boolean' ? (value ? 'True' : 'False') : String(value) };
  }
  return merged;
}

/** The invocation request of a trigger: its input under `bindingName`, its binding data as trigger metadata. */
export function invocationRequest(bindingName: string, input: DotNet, bindingData: Record<string, DotNet>, merge = true) {
  const metadata = merge ? applyBindingData(bindingData, input) : bindingData;
  const triggerMetadata: Record<string, RpcTypedData> = {};
  for (const [name, value] of Object.entries(metadata)) {
    const rpc = toRpc(value);
    if (rpc) triggerMetadata[name] = rpc;
  }
  return { inputData: [{ name: bindingName, data: toRpc(input)! }], triggerMetadata };
}

export const text = (value: string): DotNet => ({ string: value });
export const json = (value: unknown): DotNet => ({ jsonNet: JSON.stringify(value) });
export const utf8 = (value: string): Uint8Array => new Uint8Array(Buffer.from(value, 'utf8'));
