/**
 * A stand-in for `@azure/functions-core`, the module the Node worker provides to the app: `@azure/functions`
 * registers every function through it and hands it its programming model, which `WorkerHost` then invokes.
 * `installFunctionsCore()` makes this module answer to that name. `@azure/functions` looks the module up once, so
 * registrations go to the capture that is open (`captureRegistrations`), and are dropped when none is.
 */
import Module from 'node:module';

/** The metadata `@azure/functions` passes to `registerFunction` (`toCoreFunctionMetadata`). */
export interface CoreFunctionMetadata {
  readonly name: string;
  readonly bindings: Record<string, { type: string; direction: 'in' | 'out'; [key: string]: unknown }>;
  readonly retryOptions?: unknown;
  readonly [key: string]: unknown;
}

export type CoreCallback = (...args: unknown[]) => unknown;

export interface RegisteredFunction {
  readonly metadata: CoreFunctionMetadata;
  readonly callback: CoreCallback;
}

/** What the programming model of `@azure/functions` gives the worker (its `ProgrammingModel`). */
export interface ProgrammingModel {
  readonly name: string;
  readonly version: string;
  getInvocationModel(coreCtx: unknown): InvocationModel;
}

export interface InvocationModel {
  getArguments(): Promise<{ context: unknown; inputs: unknown[] }>;
  invokeFunction(context: unknown, inputs: unknown[], handler: CoreCallback): Promise<unknown>;
  getResponse(context: unknown, result: unknown): Promise<{ invocationId: string; returnValue?: unknown; outputData?: unknown[] }>;
}

let capture: RegisteredFunction[] | undefined;
let programmingModel: ProgrammingModel | undefined;

export const version = '3.10.1';
export const hostVersion = '4.1040.0';

export function registerFunction(metadata: CoreFunctionMetadata, callback: CoreCallback): { dispose(): void } {
  capture?.push({ metadata, callback });
  return { dispose() {} };
}

export function setProgrammingModel(model: ProgrammingModel): void {
  programmingModel = model;
}

export function getProgrammingModel(): ProgrammingModel | undefined {
  return programmingModel;
}

export function registerHook(): { dispose(): void } {
  return { dispose() {} };
}

export function log(): void {}

/** Runs `register` with a capture open and returns the functions it registered. */
export function captureRegistrations(register: () => void): RegisteredFunction[] {
  const previous = capture;
  const functions: RegisteredFunction[] = [];
  capture = functions;
  try {
    register();
  } finally {
    capture = previous;
  }
  return functions;
}

let installed = false;

/**
 * Makes `require('@azure/functions-core')` return this module, as the worker does. Under Jest the name is
 * mapped to this file by `moduleNameMapper` (jest.config.js) instead, since Jest resolves modules itself.
 * Must run before `@azure/functions` registers its first function (it looks the module up once).
 */
export function installFunctionsCore(): void {
  // Under Jest the hook is never consulted (Jest resolves modules itself and maps the name), so it is
  // installed whatever runs: a child process of Jest (which inherits its environment) gets it too.
  if (installed) return;
  installed = true;
  const self = module.exports as unknown;
  const loader = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
  const originalLoad = loader._load;
  loader._load = function load(this: unknown, request: string, parent: unknown, isMain: boolean) {
    if (request === '@azure/functions-core') return self;
    return originalLoad.call(this, request, parent, isMain);
  };
}
