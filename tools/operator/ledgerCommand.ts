import { TableClient } from '@azure/data-tables';
import { DefaultAzureCredential } from '@azure/identity';
import { listDiscrepancies, removeDiscrepancy, type DiscrepancyRow } from '../../src/payments/ledgerRows';

type Env = Readonly<Record<string, string | undefined>>;

/** Where the console prints. */
export interface LedgerIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

export const LEDGER_USAGE = `npm run keys -- ledger [--limit N] [--json]
    the ledger check's discrepancies (docs/deploy.md runbook, payments-ledger-discrepancy): each charge the provider
    made that no payments record holds as succeeded with that charge: key, charge id, reason, when charged and found
npm run keys -- ledger --resolve <paymentId> <chargeId> --reason "<why>" [--dry-run]
    removes one, once it is settled at the provider (refunded) or the record is corrected
  the table: --table-connection-string / --table-endpoint / --table, else IDEMPOTENCY_TABLE_CONNECTION_STRING /
  IDEMPOTENCY_TABLE_ENDPOINT (your Azure identity) / IDEMPOTENCY_TABLE_NAME, as the other commands`;

/** The idempotency table the command line or the settings name (where the ledger check writes its rows). */
export function ledgerTableOf(args: readonly string[], env: Env): TableClient {
  const option = (name: string) => {
    const i = args.indexOf(`--${name}`);
    if (i >= 0) return args[i + 1];
    const inline = args.find((a) => a.startsWith(`--${name}=`));
    return inline?.slice(name.length + 3);
  };
  const tableName = option('table') ?? env.IDEMPOTENCY_TABLE_NAME ?? 'idempotency';
  const connectionString = option('table-connection-string') ?? env.IDEMPOTENCY_TABLE_CONNECTION_STRING;
  const endpoint = option('table-endpoint') ?? env.IDEMPOTENCY_TABLE_ENDPOINT;
  if (endpoint && !connectionString)
    return new TableClient(endpoint, tableName, new DefaultAzureCredential({ managedIdentityClientId: option('client-id') ?? env.AZURE_CLIENT_ID }));
  const text = connectionString ?? 'UseDevelopmentStorage=true';
  const local = /UseDevelopmentStorage=true/i.test(text) || /http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/i.test(text);
  return TableClient.fromConnectionString(text, tableName, { allowInsecureConnection: local });
}

/** One discrepancy as a line: key, charge, reason, detail, when charged and found (never an amount, a currency, a customer). */
export function discrepancyLine(d: DiscrepancyRow): string {
  const when = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : '?');
  return `${d.paymentId || '(no key)'}  ${d.chargeId}  ${d.reason}: ${d.detail}  charged ${when(d.createdMs)}, found ${when(d.foundAtMs)}`;
}

/**
 * `npm run keys -- ledger ...`: lists the ledger check's discrepancy rows, or removes one (`--resolve`). Returns the exit
 * code: 0 done (also: none found), 2 usage, 1 the table could not be read.
 */
export async function runLedgerCommand(args: readonly string[], env: Env, io: LedgerIo, table: TableClient = ledgerTableOf(args, env)): Promise<number> {
  const resolveAt = args.indexOf('--resolve');
  try {
    if (resolveAt >= 0) {
      const [paymentId, chargeId] = [args[resolveAt + 1], args[resolveAt + 2]];
      const reasonAt = args.indexOf('--reason');
      const reason = reasonAt >= 0 ? args[reasonAt + 1] : undefined;
      if (!paymentId || !chargeId || paymentId.startsWith('--') || chargeId.startsWith('--') || !reason) {
        io.err(`error: ledger --resolve needs <paymentId> <chargeId> and --reason\n${LEDGER_USAGE}`);
        return 2;
      }
      const found = (await listDiscrepancies(table, { paymentId })).some((d) => d.chargeId === chargeId);
      if (!found) {
        io.out(`no ledger discrepancy for ${paymentId} and charge ${chargeId}`);
        return 0;
      }
      if (args.includes('--dry-run')) {
        io.out(`would remove the ledger discrepancy of ${paymentId}, charge ${chargeId} (dry run)`);
        return 0;
      }
      await removeDiscrepancy(table, paymentId, chargeId);
      io.err(`audit: ledger discrepancy of ${paymentId}, charge ${chargeId} resolved by ${env.USER ?? env.USERNAME ?? 'unknown'}: ${reason}`);
      io.out(`removed the ledger discrepancy of ${paymentId}, charge ${chargeId}`);
      return 0;
    }
    const limitAt = args.indexOf('--limit');
    const limit = limitAt >= 0 ? Number(args[limitAt + 1]) : 1000;
    if (!Number.isInteger(limit) || limit < 1) {
      io.err(`error: --limit must be a positive integer\n${LEDGER_USAGE}`);
      return 2;
    }
    const rows = await listDiscrepancies(table, { limit });
    if (args.includes('--json')) io.out(JSON.stringify({ discrepancies: rows }));
    else {
      io.out(`${rows.length} ledger discrepanc${rows.length === 1 ? 'y' : 'ies'}${rows.length === limit ? ` (the first ${limit})` : ''}`);
      for (const row of rows) io.out(discrepancyLine(row));
    }
    return 0;
  } catch (error) {
    io.err(`error: reading the ledger check's rows in ${table.tableName}: ${(error as Error).message}`);
    return 1;
  }
}

/** The lines `keys show payments <id>` adds: the key's ledger discrepancies, or that there are none (or why they could not be read). */
export async function ledgerLinesFor(table: TableClient, paymentId: string): Promise<string[]> {
  try {
    const rows = await listDiscrepancies(table, { paymentId });
    return rows.length === 0 ? ['ledger check: no discrepancy for this key'] : rows.map((d) => `ledger discrepancy: ${discrepancyLine(d)}`);
  } catch (error) {
    return [`ledger check: not read (${(error as Error).message})`];
  }
}
