import { CosmosClient, type PluginConfig } from '@azure/cosmos';
import type { FaultSwitch } from './storeFaults';

/**
 * The faults of `storeFaults.ts` for a Cosmos client (tests only), as a request plugin: it runs for each
 * network request (after the SDK's retry decisions), so each try meets them. Pass {@link CosmosFaults.plugin}
 * in the client's `plugins`. The same switch and the same meanings:
 * - `delay`: every answer comes `delayMs` late; `refuse`: every request fails before it is sent
 *   (`ECONNREFUSED`); `loseNext`: the first request acts and its answer is lost (`ECONNRESET`; the Cosmos
 *   SDK does not retry a write after that, the store reads the record to learn what happened);
 * - `hang`: the first write (not a GET) is held unanswered until the test lands it late or drops it.
 */
export class CosmosFaults {
  readonly faults: FaultSwitch = { mode: 'none', delayMs: 0, touched: 0, held: undefined };

  readonly plugin: PluginConfig = {
    on: 'request',
    // Typed loosely here (the SDK's RequestContext, its diagnostics node and next), cast once below.
    plugin: (async (context: { method?: string; options?: { abortSignal?: AbortSignal } }, diagnosticNode: unknown, next: (c: unknown) => Promise<unknown>) => {
      void diagnosticNode;
      const faults = this.faults;
      switch (faults.mode) {
        case 'none':
          return next(context);
        case 'refuse':
          faults.touched++;
          throw Object.assign(new Error('connect ECONNREFUSED (fault: refused)'), { code: 'ECONNREFUSED' });
        case 'delay': {
          faults.touched++;
          const response = await next(context);
          await new Promise((resolve) => setTimeout(resolve, faults.delayMs));
          return response;
        }
        case 'loseNext': {
          faults.touched++;
          faults.mode = 'none';
          await next(context).catch(() => undefined);
          throw Object.assign(new Error('socket hang up (fault: the answer was lost after the store acted)'), { code: 'ECONNRESET' });
        }
        case 'hang': {
          if (context.method === 'GET' || faults.held) return next(context);
          faults.touched++;
          return new Promise((resolve, reject) => {
            let decided = false;
            faults.held = {
              method: context.method ?? '?',
              land: async () => {
                if (decided) throw new Error('held write already decided');
                decided = true;
                if (context.options) context.options.abortSignal = undefined; // it was in flight: the caller's deadline no longer applies
                try {
                  const response = await next(context);
                  resolve(response); // to a caller that gave up long ago
                  return effectiveStatus(response);
                } catch (error) {
                  const status = (error as { code?: unknown }).code;
                  return typeof status === 'number' ? status : 0;
                }
              },
              drop: () => {
                decided = true;
                reject(new Error('fault: dropped, never sent'));
              },
            };
          });
        }
      }
    }) as unknown as PluginConfig['plugin'],
  };
}

/** A response's status; for a transactional batch, its first failing operation's. */
function effectiveStatus(response: unknown): number {
  const r = response as { code?: number; result?: unknown };
  if (Array.isArray(r.result)) {
    const failed = (r.result as Array<{ statusCode?: number }>).find((op) => (op.statusCode ?? 0) >= 300);
    if (failed) return failed.statusCode!;
  }
  return typeof r.code === 'number' ? r.code : 200;
}

/** A client of the emulator at `endpoint` whose requests meet the faults of the returned switch. */
export function cosmosClientWithFaults(endpoint: string): { client: CosmosClient; faults: FaultSwitch } {
  const faults = new CosmosFaults();
  const options = {
    endpoint,
    // The emulator accepts any key; this one is a placeholder, never a real credential.
    key: Buffer.from('emulator').toString('base64'),
    connectionPolicy: {
      enableEndpointDiscovery: false,
      requestTimeout: 5_000,
      retryOptions: { maxRetryAttemptCount: 3, fixedRetryIntervalInMilliseconds: 10, maxWaitTimeInSeconds: 2 },
    },
    // `plugins` is a hidden option of @azure/cosmos (not in its types): the SDK's own hook for each request.
    plugins: [faults.plugin],
  };
  return { client: new CosmosClient(options), faults: faults.faults };
}
