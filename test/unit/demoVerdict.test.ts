import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkProvider, checkProviderUrlShape } from '../../tools/demo/preflight';
import { formatEta, formatProgress } from '../../tools/demo/report';
import type { ChaosReport } from '../../tools/demo/chaosReport';
import type { PartReport } from '../../tools/demo/part';
import { withRewards } from '../../tools/demo/rewardsPart';
import { environmentViolation, judge, outageViolation, outcomeViolation, verdictLine } from '../../tools/demo/verdict';

describe('demo: the environment rule (uncharged dead-letters above the injected-fault share fail)', () => {
  const base = { chargeable: 100, injectedFaults: 50, deliveries: 500, lastErrors: [['payment provider answered 503', 70] as const] };

  test('none uncharged, or within the share of deliveries that met a fault: no violation', () => {
    expect(environmentViolation({ ...base, uncharged: 0 })).toBeUndefined();
    expect(environmentViolation({ ...base, uncharged: 10 })).toBeUndefined(); // 10 % <= 10 %
  });

  test('above it: the run fails, saying why and with the last errors', () => {
    const v = environmentViolation({ ...base, uncharged: 11 });
    expect(v).toMatch(/^the environment is broken \(provider or storage\), the run proves nothing: 11 of 100 chargeable payments \(11\.0 %\)/);
    expect(v).toMatch(/10\.0 % of deliveries met one/);
    expect(v).toMatch(/70 x "payment provider answered 503"/);
  });

  test('with no fault injected, any uncharged dead-letter fails', () => {
    expect(environmentViolation({ ...base, injectedFaults: 0, uncharged: 1 })).toBeDefined();
  });
});

describe('demo: every payment ends charged or failed with a reason (the outcome rule)', () => {
  const report = (acknowledgedWithoutOutcome: number) =>
    ({
      ok: true,
      violations: [],
      deadLetteredMessages: [],
      providerFaults: {},
      crashesInjected: 0,
      slowHandlers: 0,
      deliveries: 10,
      parts: [{ name: 'payments', details: { chargeable: 10, chargeableAwaitingOperator: 0, acknowledgedWithoutOutcome } }],
    }) as unknown as ChaosReport;

  test('a handed-off payment whose record never got a result fails the run, first among the violations', () => {
    expect(outcomeViolation(report(0))).toBeUndefined();
    expect(judge(report(0)).ok).toBe(true);
    const judged = judge(report(2));
    expect(judged.ok).toBe(false);
    expect(judged.violations[0]).toMatch(
      /^2 payment\(s\) were acknowledged \(handed off\) but their record has neither a charge nor a failure with its reason/,
    );
  });
});

describe('demo: a storage outage the run injected is judged as the app failing to ride it out, not as a broken environment', () => {
  const outageLastError = 'StoreUnavailableError: table store unavailable during claim (no response ECONNRESET); retry later';
  const report = (storageOutages: number, lastErrors: string[]) =>
    ({
      ok: true,
      violations: [],
      storageOutages,
      deadLetteredMessages: lastErrors.map((lastError, i) => ({
        queue: 'payments',
        messageId: `pay-${i}`,
        deliveryCount: 10,
        reason: 'MaxDeliveryCountExceeded',
        lastError,
      })),
      providerFaults: {},
      crashesInjected: 0,
      slowHandlers: 0,
      deliveries: 100,
      parts: [{ name: 'payments', details: { chargeable: 10, chargeableAwaitingOperator: lastErrors.length, acknowledgedWithoutOutcome: 0 } }],
    }) as unknown as ChaosReport;

  test('dead-letters with the store unavailable during injected outages: the app failed; the environment rule does not take the blame', () => {
    const judged = judge(report(1, [outageLastError, outageLastError]));
    expect(judged.ok).toBe(false);
    expect(judged.violations).toEqual([
      '2 payments message(s) dead-lettered by the injected storage outage(s) (last error: the store did not answer): the deliveries did not ride it out',
    ]);
    expect(outageViolation(report(1, []))).toBeUndefined();
  });

  test("without an injected outage the same dead-letters are the environment rule's (storage broken)", () => {
    const judged = judge(report(0, [outageLastError]));
    expect(judged.ok).toBe(false);
    expect(judged.violations[0]).toMatch(/^the environment is broken/);
  });
});

describe('demo: PAYMENT_PROVIDER_URL before the run', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((_, res) => res.writeHead(404).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  test.each([
    ['ftp://127.0.0.1:4010', 'PAYMENT_PROVIDER_URL ftp://127.0.0.1:4010 must be an http or https URL, not ftp'],
    ['http://example.com', 'PAYMENT_PROVIDER_URL http://example.com is not a loopback address; the demo only sends traffic to this machine'],
    ['127.0.0.1:4010', 'PAYMENT_PROVIDER_URL "127.0.0.1:4010" is not a URL; give http://127.0.0.1:<port> (npm run provider) or unset it'],
  ])('%s is refused', (url, message) => {
    expect(() => checkProviderUrlShape(url)).toThrow(message);
  });

  test('a loopback URL that answers (any status) is accepted; a closed port is refused in one line', async () => {
    expect(await checkProvider(`http://127.0.0.1:${port}`)).toBeUndefined();
    const closed = await new Promise<number>((r) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => r(p));
      });
    });
    const problem = await checkProvider(`http://127.0.0.1:${closed}`);
    expect(problem).toBe(
      `PAYMENT_PROVIDER_URL http://127.0.0.1:${closed} does not answer (connection refused: nothing listens on that port); start one with \`npm run provider\` or unset PAYMENT_PROVIDER_URL to use the demo's own`,
    );
  });
});

describe('demo: progress', () => {
  const p = {
    elapsedMs: 10_000,
    sent: 400,
    plannedSends: 400,
    deliveries: 300,
    completed: 190,
    redeliveries: 20,
    inFlight: 8,
    crashes: 5,
    deadLettered: 10,
    outage: false,
  };
  test('totals, percent and ETA; a bar on a terminal', () => {
    expect(formatProgress(p)).toMatch(/^\[ {2}10\.0s\] {2}50% {2}settled 200\/400 {2}ETA 10s {2}sent 400/);
    expect(formatProgress(p, { bar: true })).toContain('[############............]  50%');
    expect(formatEta(65_000)).toBe('1m 05s');
  });
});

describe('demo: the rewards part in the verdict', () => {
  const passing = { ok: true, violations: [] as string[], messages: 10, lost: 0, doubleCharged: 0, parts: [] } as unknown as ChaosReport;
  const rewards = (balancesMatching: number, violations: string[] = []): PartReport => ({
    name: 'rewards',
    messages: 30,
    unique: 30,
    duplicatesDetected: 5,
    parkedByReason: {},
    lostMessages: [],
    doubleEffects: violations.length > 0 ? ['cust-1'] : [],
    violations,
    details: { balancesMatching, customers: 3 },
  });

  test('its balances are in the verdict line; its violations fail the run, prefixed', () => {
    expect(verdictLine(withRewards(passing, rewards(3)))).toBe('10 messages: 0 lost, 0 double charges, 3/3 reward balances right: PASS');
    const failed = withRewards(passing, rewards(2, ['cust-1: balance 9 > 7, the points of its distinct events (an event counted twice)']));
    expect(failed.ok).toBe(false);
    expect(verdictLine(failed)).toBe(
      '10 messages: 0 lost, 0 double charges, 2/3 reward balances right: FAIL - rewards: cust-1: balance 9 > 7, the points of its distinct events (an event counted twice)',
    );
    expect(withRewards(passing, undefined)).toBe(passing);
  });
});
