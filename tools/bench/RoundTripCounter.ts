import type { TableClient } from '@azure/data-tables';

type Pipeline = TableClient['pipeline'];
type Policy = Parameters<Pipeline['addPolicy']>[0];

/** Name of the counting policy in the client's pipeline. */
export const COUNT_POLICY_NAME = 'countRoundTrips';

/**
 * Counts the HTTP requests a `TableClient` sends, exactly: a pipeline policy right before the transport (after the
 * retry policy: an SDK retry is a second round trip, as on the bill; a `$batch` is one). `attach` throws when the
 * pipeline does not order it after the retry policy (an SDK change).
 */
export class RoundTripCounter {
  private requests = 0;

  private constructor() {}

  static attach(client: TableClient): RoundTripCounter {
    const counter = new RoundTripCounter();
    const policy: Policy = {
      name: COUNT_POLICY_NAME,
      sendRequest: (request, next) => {
        counter.requests++;
        return next(request);
      },
    };
    client.pipeline.addPolicy(policy, { afterPhase: 'Sign' });
    assertAfterRetry(client.pipeline);
    return counter;
  }

  /** Requests sent since attach. */
  get count(): number {
    return this.requests;
  }

  /** Runs `work` and returns how many requests it sent (meaningful only when nothing else uses the client meanwhile). */
  async measure(work: () => Promise<unknown>): Promise<number> {
    const before = this.requests;
    await work();
    return this.requests - before;
  }
}

function assertAfterRetry(pipeline: Pipeline): void {
  const names = pipeline.getOrderedPolicies().map((p) => p.name);
  const counted = names.indexOf(COUNT_POLICY_NAME);
  const retry = names.findIndex((name) => /retry/i.test(name));
  if (counted < 0 || retry < 0 || counted < retry) {
    throw new Error(`round-trip counter is not placed after the retry policy; pipeline order: ${names.join(', ')}`);
  }
}
