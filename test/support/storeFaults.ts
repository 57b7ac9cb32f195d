import { RestError, type PipelineRequest, type PipelineResponse, type SendRequest } from '@azure/core-rest-pipeline';
import type { TableClient } from '@azure/data-tables';

/**
 * Faults of a Table store's network, switched per operation (tests only), injected in the client's
 * pipeline after its retry policy, so each try of a request meets them:
 * - `delay`: every answer comes `delayMs` late (inside the store's deadline);
 * - `loseNext`: the first request reaches the table and acts, its answer is lost (the SDK retries);
 * - `refuse`: every request is refused before it is sent (connection refused: nothing decided);
 * - `hang`: the first write (not a GET) is taken and never answered: it is held until the test
 *   decides, after the operation has given up, to {@link HeldWrite.land} it (it reaches the table late)
 *   or to {@link HeldWrite.drop} it (it never does).
 */
export type NetworkFault = 'none' | 'delay' | 'loseNext' | 'refuse' | 'hang';

/** A write held by `hang`. */
export interface HeldWrite {
  readonly method: string;
  /**
   * Sends it now (its abort signal detached: it was in flight); resolves with the table's status (for a
   * transaction, the first failing operation's status, since a batch is answered 202 either way).
   */
  land(): Promise<number>;
  /** Never sends it. */
  drop(): void;
}

export interface FaultSwitch {
  mode: NetworkFault;
  delayMs: number;
  /** How many requests the current fault touched. */
  touched: number;
  /** The write `hang` holds, if one was taken. */
  held: HeldWrite | undefined;
}

/** Installs the fault policy on `client`; set `mode` before an operation and back to `none` after. */
export function installFaults(client: TableClient): FaultSwitch {
  const faults: FaultSwitch = { mode: 'none', delayMs: 0, touched: 0, held: undefined };
  client.pipeline.addPolicy(
    {
      name: 'networkFaults',
      sendRequest: async (request: PipelineRequest, next: SendRequest): Promise<PipelineResponse> => {
        switch (faults.mode) {
          case 'none':
            return next(request);
          case 'refuse':
            faults.touched++;
            throw new RestError('connect ECONNREFUSED (fault: refused)', { code: 'ECONNREFUSED', request });
          case 'delay': {
            faults.touched++;
            const response = await next(request);
            await new Promise((resolve) => setTimeout(resolve, faults.delayMs));
            return response;
          }
          case 'loseNext': {
            faults.touched++;
            faults.mode = 'none';
            await next(request);
            throw new RestError('socket hang up (fault: the answer was lost after the table acted)', { code: 'ECONNRESET', request });
          }
          case 'hang': {
            if (request.method === 'GET' || faults.held) return next(request);
            faults.touched++;
            return new Promise<PipelineResponse>((resolve, reject) => {
              let decided = false;
              faults.held = {
                method: request.method,
                land: async () => {
                  if (decided) throw new Error('held write already decided');
                  decided = true;
                  request.abortSignal = undefined;
                  const response = await next(request);
                  resolve(response); // to a caller that gave up long ago: nothing retries it
                  return effectiveStatus(response);
                },
                drop: () => {
                  decided = true;
                  reject(new Error('fault: dropped, never sent')); // not a network error: never retried
                },
              };
            });
          }
        }
      },
    },
    { afterPhase: 'Retry' },
  );
  return faults;
}

/** A response's status; for an entity-group transaction (202 whatever happened inside), its first failing operation's. */
function effectiveStatus(response: PipelineResponse): number {
  const inner = [...(response.bodyAsText ?? '').matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((match) => Number(match[1]));
  return inner.find((status) => status >= 300) ?? response.status;
}
