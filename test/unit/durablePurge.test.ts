/**
 * The purge of Durable's records of old payments (src/app/durablePurge.ts), in memory. The task hub is a fake client with an RPC endpoint whose instance query is answered page by
 * page; each test asserts what the purge removes or keeps, the report an operator reads, and the query it sends.
 */
import type { InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { durableClientOf, purgeDurableRecords, PURGE_PAGE_SIZE } from '../../src/app/durablePurge';

type Status = { instanceId: string; runtimeStatus: string; input?: unknown };

/** A task hub answering the instance query from `pages` (the token is the next page's index) and recording purges. */
function hub(pages: Status[][], options: { tokens?: Array<string | null> } = {}) {
  const urls: URL[] = [];
  const purged: string[] = [];
  const client = {
    clientData: { rpcBaseUrl: 'http://hub.local/runtime/webhooks/durabletask/' },
    purgeInstanceHistory: async (id: string) => (purged.push(id), { instancesDeleted: 1 }),
  } as unknown as df.DurableClient;
  const http = async (url: URL, init: { headers: Record<string, string> }) => {
    urls.push(url);
    const index = Number(init.headers['x-ms-continuation-token'] ?? 0);
    const token = options.tokens ? options.tokens[index] : index + 1 < pages.length ? String(index + 1) : undefined;
    return new Response(JSON.stringify(pages[index]), {
      status: 200,
      headers: token === undefined || token === null ? {} : { 'x-ms-continuation-token': token },
    });
  };
  return { client, http, urls, purged };
}

const run = (id: string, key?: string): Status => ({
  instanceId: `payment-${id}`,
  runtimeStatus: 'Completed',
  input: key === undefined ? {} : { idempotencyKey: key },
});
const clock = { nowMs: () => 0 };
const notLive = async () => false;

describe('purgeDurableRecords', () => {
  test('asks only for final charge runs created before the cutoff, by the payment- prefix, a page of PURGE_PAGE_SIZE by default', async () => {
    const h = hub([[run('k1', 'p1')]]);
    const report = await purgeDurableRecords(h.client, { cutoffMs: 86_400_000, budgetMs: 60_000, clock, recordLive: notLive, http: h.http });
    expect(report).toEqual({ found: 1, orchestrations: 1, entities: 1, keptLive: 0, pages: 1, stoppedByBudget: false });
    const query = h.urls[0].searchParams;
    expect(query.get('runtimeStatus')).toBe('Completed,Failed,Terminated');
    expect(query.get('createdTimeTo')).toBe('1970-01-02T00:00:00.000Z');
    expect(query.get('top')).toBe(String(PURGE_PAGE_SIZE));
    expect(PURGE_PAGE_SIZE).toBe(100);
    expect(query.get('instanceIdPrefix')).toBe('payment-');
    // The entity first (a purge stopped between the two leaves the run, found again next time), by its lower-cased name.
    expect(h.purged).toEqual(['@paymentcharge@k1', 'payment-k1']);
  });

  test('an instance without the payment- prefix is neither counted nor purged; a run whose input names no key is kept (fails closed)', async () => {
    const h = hub([
      [
        { instanceId: 'order-9', runtimeStatus: 'Completed', input: { idempotencyKey: 'o9' } },
        run('k2'),
        { instanceId: 'payment-k3', runtimeStatus: 'Failed' },
        run('k4', 'p4'),
      ],
    ]);
    const seen: string[] = [];
    const report = await purgeDurableRecords(h.client, {
      cutoffMs: 1_000,
      budgetMs: 60_000,
      clock,
      recordLive: async (key, entityKey) => (seen.push(`${key}:${entityKey}`), false),
      http: h.http,
    });
    expect(report).toEqual({ found: 3, orchestrations: 1, entities: 1, keptLive: 2, pages: 1, stoppedByBudget: false });
    expect(seen).toEqual(['p4:k4']);
    expect(h.purged).toEqual(['@paymentcharge@k4', 'payment-k4']);
  });

  test('an empty page with a continuation token goes on to the next; a "null" token ends', async () => {
    const h = hub([[], [run('k5', 'p5')], [run('k6', 'p6')]], { tokens: ['1', 'null', undefined as unknown as string] });
    const report = await purgeDurableRecords(h.client, { cutoffMs: 1_000, budgetMs: 60_000, clock, recordLive: notLive, http: h.http });
    expect(report).toMatchObject({ found: 1, orchestrations: 1, pages: 2, stoppedByBudget: false });
    expect(h.purged).toEqual(['@paymentcharge@k5', 'payment-k5']);
  });

  test('a budget spent before a page is read (the deadline is now) stops the purge there: nothing read, reported as stopped', async () => {
    const h = hub([[run('k7', 'p7')]]);
    const report = await purgeDurableRecords(h.client, {
      cutoffMs: 1_000,
      budgetMs: 0,
      clock,
      recordLive: notLive,
      http: h.http,
    });
    expect(report).toEqual({ found: 0, orchestrations: 0, entities: 0, keptLive: 0, pages: 0, stoppedByBudget: true });
    expect(h.urls).toEqual([]);
  });

  test('a budget that runs out at the second page stops before reading it; the page counts add up over runs purged', async () => {
    const h = hub([[run('a', 'pa'), run('b', 'pb')], [run('c', 'pc')]]);
    let now = 0;
    const report = await purgeDurableRecords(h.client, {
      cutoffMs: 1_000,
      budgetMs: 10,
      clock: { nowMs: () => now },
      pageSize: 2,
      recordLive: async () => ((now += 5), false),
      http: h.http,
    });
    expect(report).toEqual({ found: 2, orchestrations: 2, entities: 2, keptLive: 0, pages: 1, stoppedByBudget: true });
    expect(h.urls).toHaveLength(1);
    expect(h.urls[0].searchParams.get('top')).toBe('2');
  });
});

describe('durableClientOf', () => {
  test('undefined for a function without a durableClient input', () => {
    const context = { options: { extraInputs: [{ type: 'table', name: 'x' }] } } as unknown as InvocationContext;
    expect(durableClientOf(context)).toBeUndefined();
  });

  test('the invocation’s client for a function with a durableClient input', () => {
    const spy = jest.spyOn(df, 'getClient').mockReturnValue('the client' as unknown as df.DurableClient);
    const context = { options: { extraInputs: [{ type: 'table' }, { type: 'durableClient', name: 'starter' }] } } as unknown as InvocationContext;
    expect(durableClientOf(context)).toBe('the client');
    expect(spy).toHaveBeenCalledWith(context);
    spy.mockRestore();
  });
});
