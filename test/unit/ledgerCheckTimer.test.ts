/**
 * The ledger check timer's wiring from the settings (src/app/ledgerCheckTimer.ts `ledgerCheckFromSettings`,
 * `noLedgerCheckReason`), without a store: a provider without a list skips every tick and says why, and settings whose
 * grace plus the list's delay do not fit inside the records' retention are refused at start, naming them. The tick
 * itself runs on Azurite in test/integration/ledgerCheck.test.ts.
 */
import type { InvocationContext, Timer } from '@azure/functions';
import { ConfigurationError } from 'azure-functions-idempotency';
import { ledgerCheckFromSettings, noLedgerCheckReason } from '../../src/app/ledgerCheckTimer';
import { loadSettings } from '../../src/config/settings';
import { retryBudgetOf } from '../../src/app/payments';
import { ledgerGraceMs } from '../../src/payments/ledgerCheck';

const settingsOf = (env: Record<string, string>) =>
  loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9', ...env });

function contextOf() {
  const lines: Array<[string, string]> = [];
  const context = {
    log: (line: string) => void lines.push(['log', line]),
    warn: (line: string) => void lines.push(['warn', line]),
    error: (line: string) => void lines.push(['error', line]),
  } as unknown as InvocationContext;
  return { context, lines };
}
const tick = { isPastDue: false } as Timer;

describe('the ledger check timer from the settings', () => {
  test('PAYMENT_PROVIDER_LEDGER=none (the default): every tick is skipped, saying why; nothing else is touched', async () => {
    const settings = settingsOf({});
    const reason = noLedgerCheckReason(settings);
    expect(reason).toMatch(/^PAYMENT_PROVIDER_LEDGER=none: the provider offers no list of its charges by time/);
    const { context, lines } = contextOf();
    await ledgerCheckFromSettings(settings, {
      tableClient: () => {
        throw new Error('no table is built for a skipped check');
      },
    })(tick, context);
    expect(lines).toEqual([['log', `payments ledger check: skipped (${reason})`]]);
    expect(noLedgerCheckReason(settingsOf({ PAYMENT_PROVIDER_LEDGER: 'list' }))).toBeUndefined();
  });

  test("a grace plus the list's delay not inside the retention: refused at start, naming the settings", () => {
    // The grace: the retry budget + 7 days of record-write retries + 1 h (just over 7 days with the defaults).
    const tooShort = settingsOf({ PAYMENT_PROVIDER_LEDGER: 'list', IDEMPOTENCY_RETENTION_DAYS: '7' });
    expect(() => ledgerCheckFromSettings(tooShort)).toThrow(ConfigurationError);
    expect(() => ledgerCheckFromSettings(tooShort)).toThrow(
      /^the ledger check's grace \(\d+ h: PAYMENT_RETRY_BUDGET_MINUTES \+ 7 days of record-write retries \+ 1 h\) plus PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS must be shorter than IDEMPOTENCY_RETENTION_DAYS$/,
    );
    const delayed = settingsOf({
      PAYMENT_PROVIDER_LEDGER: 'list',
      IDEMPOTENCY_RETENTION_DAYS: '30',
      PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS: String(23 * 86_400),
    });
    expect(() => ledgerCheckFromSettings(delayed)).toThrow(ConfigurationError);
    // At the bound: a grace plus delay equal to the retention is refused, a millisecond more retention fits; the hours named.
    const list = settingsOf({ PAYMENT_PROVIDER_LEDGER: 'list', PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS: '600' });
    const needMs = ledgerGraceMs(retryBudgetOf(list)) + 600_000;
    expect(() => ledgerCheckFromSettings(list, { retentionMs: needMs })).toThrow(
      `the ledger check's grace (${Math.round(ledgerGraceMs(retryBudgetOf(list)) / 3_600_000)} h:`,
    );
    expect(typeof ledgerCheckFromSettings(list, { retentionMs: needMs + 1 })).toBe('function');
    const fits = settingsOf({ PAYMENT_PROVIDER_LEDGER: 'list', IDEMPOTENCY_RETENTION_DAYS: '30', PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS: String(10_800) });
    expect(typeof ledgerCheckFromSettings(fits)).toBe('function');
  });
});
