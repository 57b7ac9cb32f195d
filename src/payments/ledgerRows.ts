import type { TableClient } from '@azure/data-tables';
import { withDeadline } from 'azure-functions-idempotency';
import { classifyStoreError, toDomainError } from 'azure-functions-idempotency/table';
import type { DiscrepancyReason, LedgerCheckpoint, LedgerDiscrepancy, PendingCharge } from './ledgerCheck';

/**
 * The ledger check's own rows in the idempotency table (never a record partition, `pXXX`: the sweep, the reconciler and
 * the key console's record listing never read them):
 * - partition `ledger-check`, row `checkpoint`: where the check stands (window start, cursor, undecided charges),
 *   written conditionally on the ETag it was read with, so two overlapping ticks cannot both move it;
 * - partition `ledger-discrepancy`, row `<paymentId>|<chargeId>` (each URI-encoded): one per discrepancy found, created
 *   once (an overlapping tick's second report is a 409, not a second row); read by `npm run keys -- ledger`. They stay
 *   until an operator removes them (`keys ledger --resolve`), like the alert's incident.
 */
export const LEDGER_CHECK_PARTITION = 'ledger-check';
export const LEDGER_DISCREPANCY_PARTITION = 'ledger-discrepancy';
const CHECKPOINT_ROW = 'checkpoint';

/** A checkpoint as read, with the row's ETag (undefined: no row yet). */
export interface StoredLedgerCheckpoint {
  readonly checkpoint: LedgerCheckpoint | undefined;
  readonly etag: string | undefined;
}

/**
 * Reads the checkpoint; no row (or no table yet) is undefined.
 * @throws StoreUnavailableError / StoreRequestError
 */
export async function readLedgerCheckpoint(client: TableClient, timeoutMs: number): Promise<StoredLedgerCheckpoint> {
  try {
    const row = await withDeadline(timeoutMs, 'ledgerCheck.readCheckpoint', 'read', (abortSignal) =>
      client.getEntity<Record<string, unknown>>(LEDGER_CHECK_PARTITION, CHECKPOINT_ROW, { abortSignal }),
    );
    const fromMs = Number(row.fromMs);
    const cursor = typeof row.cursor === 'string' && row.cursor !== '' ? row.cursor : undefined;
    const pending = pendingOf(row.pending);
    return { checkpoint: Number.isFinite(fromMs) ? { fromMs, ...(cursor ? { cursor } : {}), pending } : undefined, etag: row.etag };
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return { checkpoint: undefined, etag: undefined };
    throw toDomainError(error, 'ledgerCheck.readCheckpoint', 'read');
  }
}

/**
 * Moves the checkpoint from the version read (`etag`; undefined: insert if absent) to `checkpoint`.
 * @returns false when another tick moved it first (its checkpoint stays).
 * @throws StoreUnavailableError / StoreRequestError
 */
export async function writeLedgerCheckpoint(
  client: TableClient,
  etag: string | undefined,
  checkpoint: LedgerCheckpoint,
  nowMs: number,
  timeoutMs: number,
): Promise<boolean> {
  const entity = {
    partitionKey: LEDGER_CHECK_PARTITION,
    rowKey: CHECKPOINT_ROW,
    kind: 'ledger-checkpoint',
    fromMs: { value: String(Math.trunc(checkpoint.fromMs)), type: 'Int64' as const },
    cursor: checkpoint.cursor ?? '',
    pending: JSON.stringify(checkpoint.pending),
    updatedAtMs: { value: String(Math.trunc(nowMs)), type: 'Int64' as const },
  };
  try {
    await withDeadline(timeoutMs, 'ledgerCheck.writeCheckpoint', 'write', (abortSignal) =>
      etag === undefined ? client.createEntity(entity, { abortSignal }) : client.updateEntity(entity, 'Replace', { etag, abortSignal }),
    );
    return true;
  } catch (error) {
    classifyStoreError(error, 'ledgerCheck.writeCheckpoint', 'write'); // throws unless 409 / 412 / 404
    return false;
  }
}

/** The row key of a discrepancy: `<paymentId>|<chargeId>`, each URI-encoded (no `/ \ # ?` reaches the key). */
export function discrepancyRowKey(paymentId: string, chargeId: string): string {
  return `${encodeURIComponent(paymentId)}|${encodeURIComponent(chargeId)}`;
}

/**
 * Records a discrepancy once.
 * @returns false when it was already recorded (an overlapping tick, or a tick re-run after its checkpoint write failed).
 * @throws StoreUnavailableError / StoreRequestError
 */
export async function recordDiscrepancy(client: TableClient, discrepancy: LedgerDiscrepancy, nowMs: number, timeoutMs: number): Promise<boolean> {
  const entity = {
    partitionKey: LEDGER_DISCREPANCY_PARTITION,
    rowKey: discrepancyRowKey(discrepancy.paymentId, discrepancy.chargeId),
    kind: 'ledger-discrepancy',
    paymentId: discrepancy.paymentId,
    chargeId: discrepancy.chargeId,
    chargeCreatedMs: { value: String(Math.trunc(discrepancy.createdMs)), type: 'Int64' as const },
    reason: discrepancy.reason,
    detail: discrepancy.detail.slice(0, 500),
    foundAtMs: { value: String(Math.trunc(nowMs)), type: 'Int64' as const },
  };
  try {
    await withDeadline(timeoutMs, 'ledgerCheck.recordDiscrepancy', 'write', (abortSignal) => client.createEntity(entity, { abortSignal }));
    return true;
  } catch (error) {
    if (classifyStoreError(error, 'ledgerCheck.recordDiscrepancy', 'write') === 'exists') return false;
    throw toDomainError(error, 'ledgerCheck.recordDiscrepancy', 'write');
  }
}

/** A recorded discrepancy as the key console shows it. */
export interface DiscrepancyRow extends LedgerDiscrepancy {
  readonly foundAtMs: number;
}

/**
 * The recorded discrepancies, all of them or those of one payment (`paymentId`: a range of its row keys), oldest first
 * by row key. At most `limit` (default 1,000).
 * @throws StoreUnavailableError / StoreRequestError
 */
export async function listDiscrepancies(client: TableClient, options: { paymentId?: string; limit?: number } = {}): Promise<DiscrepancyRow[]> {
  const limit = options.limit ?? 1000;
  const prefix = options.paymentId === undefined ? undefined : `${encodeURIComponent(options.paymentId)}|`;
  // '}' follows '|' in code order: the range holds exactly the row keys starting with the payment's prefix.
  const filter =
    `PartitionKey eq '${LEDGER_DISCREPANCY_PARTITION}'` + (prefix ? ` and RowKey ge '${odata(prefix)}' and RowKey lt '${odata(prefix.slice(0, -1))}}'` : '');
  const rows: DiscrepancyRow[] = [];
  try {
    for await (const row of client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
      rows.push({
        paymentId: textOf(row.paymentId),
        chargeId: textOf(row.chargeId),
        createdMs: Number(row.chargeCreatedMs),
        reason: textOf(row.reason) as DiscrepancyReason,
        detail: textOf(row.detail),
        foundAtMs: Number(row.foundAtMs),
      });
      if (rows.length >= limit) break;
    }
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return rows;
    throw toDomainError(error, 'ledgerCheck.listDiscrepancies', 'read');
  }
  return rows;
}

/**
 * Removes one recorded discrepancy (the operator settled it: refunded the charge, or corrected the record).
 * @returns false when there was none.
 * @throws StoreUnavailableError / StoreRequestError
 */
export async function removeDiscrepancy(client: TableClient, paymentId: string, chargeId: string): Promise<boolean> {
  try {
    await client.deleteEntity(LEDGER_DISCREPANCY_PARTITION, discrepancyRowKey(paymentId, chargeId));
    return true;
  } catch (error) {
    if (classifyStoreError(error, 'ledgerCheck.removeDiscrepancy', 'write') === 'notFound') return false;
    throw toDomainError(error, 'ledgerCheck.removeDiscrepancy', 'write');
  }
}

function textOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function odata(text: string): string {
  return text.replace(/'/g, "''");
}

/** The undecided charges of a checkpoint row (JSON); entries that do not read as one are dropped. */
function pendingOf(value: unknown): PendingCharge[] {
  if (typeof value !== 'string' || value === '') return [];
  try {
    const list = JSON.parse(value) as unknown;
    if (!Array.isArray(list)) return [];
    return list.filter(
      (p): p is PendingCharge =>
        typeof p === 'object' &&
        p !== null &&
        typeof (p as PendingCharge).id === 'string' &&
        typeof (p as PendingCharge).paymentId === 'string' &&
        Number.isFinite((p as PendingCharge).createdMs) &&
        ((p as PendingCharge).why === 'record-in-progress' || (p as PendingCharge).why === 'charge-pending'),
    );
  } catch {
    return [];
  }
}
