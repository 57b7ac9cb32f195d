import { randomBytes } from 'node:crypto';
import { createHttpHeaders, type PipelineRequest, type SendRequest } from '@azure/core-rest-pipeline';
import { CosmosClient, ErrorResponse, type PluginConfig } from '@azure/cosmos';
import {
  CosmosIdempotencyStore,
  type IdempotencyError,
  keyFromMessageId,
  payloadDigest,
  StoreUnavailableError,
  TableIdempotencyStore,
  type Claim,
  type IdempotencyStore,
} from 'azure-functions-idempotency/internal';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator } from '../support/cosmos';
import { freshTable } from '../support/tables';

/**
 * A store failure carries the SDK's own error as its `cause`: its HTTP status and error code are read at
 * `error.cause`, one level down, whatever the store did before giving up (a claim reads back what its
 * failed write may have left, and used to wrap the first failure in a second one: two `cause`s deep).
 */
const azuriteOf = useAzurite();
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos?.stop();
});

const digest = payloadDigest({ amount: 1 });
const key = (id: string) => keyFromMessageId('cause', `${id}-${randomBytes(4).toString('hex')}`);

/** A Table store whose writes (not reads), once `failing`, are answered 500 InternalError as the service answers it. */
async function failingTableStore() {
  const client = await freshTable(azuriteOf());
  const state = { failing: false };
  client.pipeline.addPolicy(
    {
      name: 'internalError',
      sendRequest: async (request: PipelineRequest, next: SendRequest) => {
        if (!state.failing || request.method === 'GET') return next(request);
        const body = JSON.stringify({ 'odata.error': { code: 'InternalError', message: { lang: 'en-US', value: 'fault (test)' } } });
        return {
          request,
          status: 500,
          headers: createHttpHeaders({ 'x-ms-error-code': 'InternalError', 'content-type': 'application/json;odata=minimalmetadata' }),
          bodyAsText: body,
        };
      },
    },
    { afterPhase: 'Retry' },
  );
  return { store: new TableIdempotencyStore(client, { retentionMs: 86_400_000, leaseMs: 60_000 }), state };
}

/** A Cosmos store whose writes (not reads), once `failing`, fail with the SDK's own ErrorResponse 500. */
async function failingCosmosStore() {
  const state = { failing: false };
  const plugin: PluginConfig = {
    on: 'request',
    plugin: (async (context: { method?: string }, _node: unknown, next: (c: unknown) => Promise<unknown>) => {
      if (!state.failing || context.method === 'GET') return next(context);
      throw Object.assign(new ErrorResponse('Internal Server Error (fault, test)'), { code: 500, substatus: 0 });
    }) as unknown as PluginConfig['plugin'],
  };
  const client = new CosmosClient({
    endpoint: cosmos.endpoint,
    key: Buffer.from('emulator').toString('base64'), // the emulator accepts any key: a placeholder, not a credential
    connectionPolicy: {
      enableEndpointDiscovery: false,
      retryOptions: { maxRetryAttemptCount: 1, fixedRetryIntervalInMilliseconds: 10, maxWaitTimeInSeconds: 1 },
    },
    plugins: [plugin],
  } as ConstructorParameters<typeof CosmosClient>[0]);
  const container = await CosmosIdempotencyStore.ensureContainer(client, 'idempotency', `records${randomBytes(5).toString('hex')}`);
  return { store: new CosmosIdempotencyStore(container, { retentionMs: 86_400_000, leaseMs: 60_000 }), state, dispose: () => client.dispose() };
}

/** Every operation's failure: a domain error whose `cause` is the SDK's error with status 500. */
async function failuresOf(store: IdempotencyStore, state: { failing: boolean }): Promise<Record<string, unknown>> {
  const held = await store.claim(key('held'), digest);
  if (held.kind !== 'claimed') throw new Error(held.kind);
  const claim: Claim = held.claim;
  state.failing = true;
  const failed = async (call: () => Promise<unknown>) =>
    call().then(
      () => 'no failure',
      (error: unknown) => error,
    );
  return {
    claim: await failed(() => store.claim(key('claim'), digest)),
    renewLease: await failed(() => store.renewLease(claim)),
    complete: await failed(() => store.complete(claim, 'done')),
    release: await failed(() => store.release(claim, 'failed')),
  };
}

describe("a store failure's cause is the SDK's own error (status and code at error.cause)", () => {
  test('Table store (Azurite, writes answered 500 InternalError)', async () => {
    const { store, state } = await failingTableStore();
    const failures = await failuresOf(store, state);
    for (const [operation, error] of Object.entries(failures)) {
      expect([operation, error]).toEqual([operation, expect.any(StoreUnavailableError)]);
      // The Table SDK's RestError: the status at statusCode, the service's error code at details.errorCode (x-ms-error-code).
      const cause = (error as IdempotencyError).cause as { statusCode?: unknown; details?: { errorCode?: unknown }; name?: unknown };
      expect([operation, cause?.name, cause?.statusCode, cause?.details?.errorCode]).toEqual([operation, 'RestError', 500, 'InternalError']);
    }
  });

  test('Cosmos store (emulator, writes failing with ErrorResponse 500)', async () => {
    const { store, state, dispose } = await failingCosmosStore();
    try {
      const failures = await failuresOf(store, state);
      for (const [operation, error] of Object.entries(failures)) {
        expect([operation, error]).toEqual([operation, expect.any(StoreUnavailableError)]);
        const cause = (error as IdempotencyError).cause;
        expect([operation, cause instanceof ErrorResponse, (cause as ErrorResponse).code]).toEqual([operation, true, 500]);
      }
    } finally {
      dispose();
    }
  });
});
