import { randomUUID } from 'node:crypto';
import { captureRegistrations, getProgrammingModel, installFunctionsCore, type RegisteredFunction } from './functionsCore';

/** A value as the host sends it to the worker (`RpcTypedData`, the fields this app's bindings use). */
export type RpcTypedData =
  | { readonly string: string }
  | { readonly json: string }
  | { readonly bytes: Uint8Array }
  | { readonly int: number }
  | { readonly collectionString: { readonly string: readonly string[] } }
  | { readonly collectionBytes: { readonly bytes: readonly Uint8Array[] } };

/** One binding's data of an invocation request (`ParameterBinding`). */
export interface RpcParameterBinding {
  readonly name: string;
  readonly data: RpcTypedData;
}

/** An invocation request as the worker receives it (`InvocationRequest`, the fields the programming model reads). */
export interface RpcInvocationRequest {
  readonly inputData: readonly RpcParameterBinding[];
  readonly triggerMetadata?: Record<string, RpcTypedData>;
}

/** Thrown when the handler throws: the worker reports the invocation failed with the error's message and stack. */
export class InvocationFailedError extends Error {
  constructor(
    readonly functionName: string,
    readonly error: unknown,
  ) {
    super(`${functionName} failed: ${error instanceof Error ? error.message : String(error)}`);
    this.name = 'InvocationFailedError';
  }
}

/**
 * The Node worker's part, in process: captures the functions an app registers through `@azure/functions-core` and
 * invokes them as the worker does, through the programming model `@azure/functions` gave it (`getInvocationModel`,
 * `getArguments`, `invokeFunction`, `getResponse`). No hooks, no gRPC.
 */
export class WorkerHost {
  private readonly functions = new Map<string, RegisteredFunction>();

  /** Installs the `@azure/functions-core` stand-in and runs `register` (e.g. the app's registration function). */
  static load(register: () => void): WorkerHost {
    installFunctionsCore();
    const host = new WorkerHost();
    for (const f of captureRegistrations(register)) host.functions.set(f.metadata.name, f);
    return host;
  }

  /** The registered functions' metadata, by name. */
  get registrations(): ReadonlyMap<string, RegisteredFunction> {
    return this.functions;
  }

  /** The binding name of the function's trigger, or of its first input binding of `type`. */
  bindingName(functionName: string, type: string): string {
    const f = this.function(functionName);
    const found = Object.entries(f.metadata.bindings).find(([, b]) => b.type === type && b.direction === 'in');
    if (!found) throw new Error(`${functionName} has no input binding of type ${type}`);
    return found[0];
  }

  /**
   * Invokes a registered function with a request as the host sends it.
   * @returns the response's return value, decoded as the host would read it (JSON)
   * @throws InvocationFailedError when the handler throws (the worker reports Failure)
   */
  async invoke(functionName: string, request: RpcInvocationRequest): Promise<unknown> {
    const f = this.function(functionName);
    const model = getProgrammingModel();
    if (!model) throw new Error('no programming model was set: did @azure/functions register through the stand-in core?');
    const invocationId = randomUUID();
    const coreCtx = {
      invocationId,
      request: { invocationId, functionId: functionName, inputData: request.inputData, triggerMetadata: request.triggerMetadata ?? {} },
      metadata: f.metadata,
      state: 'invocation',
      log: () => undefined,
    };
    const invocation = model.getInvocationModel(coreCtx);
    const { context, inputs } = await invocation.getArguments();
    let result: unknown;
    try {
      result = await invocation.invokeFunction(context, inputs, f.callback);
    } catch (error) {
      throw new InvocationFailedError(functionName, error);
    }
    const response = await invocation.getResponse(context, result);
    return decodeTypedData(response.returnValue as RpcTypedData | undefined);
  }

  private function(name: string): RegisteredFunction {
    const f = this.functions.get(name);
    if (!f) throw new Error(`function ${name} is not registered (registered: ${[...this.functions.keys()].join(', ')})`);
    return f;
  }
}

/** Typed data as the host reads a return value (`json` and `string` parsed as JSON). */
function decodeTypedData(data: RpcTypedData | undefined): unknown {
  if (!data) return undefined;
  if ('json' in data) return JSON.parse(data.json) as unknown;
  if ('string' in data) return data.string;
  if ('int' in data) return data.int;
  if ('bytes' in data) return Buffer.from(data.bytes);
  return undefined;
}
