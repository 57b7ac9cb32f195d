import type { LedgerCharge } from './providerTypes';

/** The status a charge reads at `nowMs` (a non-final success reads `pending` until it settles). */
export const chargeStatusAt = (charge: Pick<LedgerCharge, 'pendingUntilMs'>, nowMs: number): 'succeeded' | 'pending' =>
  charge.pendingUntilMs !== undefined && nowMs < charge.pendingUntilMs ? 'pending' : 'succeeded';

/**
 * The provider's list by time window, the fixed contract the fake provider and the app's client share (issue 62):
 * `GET /v1/charges?created_gte=<epoch ms>&created_lt=<epoch ms>&limit=<1..100>[&starting_after=<chargeId>]` ->
 * 200 `{ data: [{ id, status, amount, currency, idempotency_key, created }], has_more }`, ascending by (created, id),
 * a charge listed once it is `lagMs` old (the profile's list lag: Stripe's list is read-after-write, PayPal's
 * Transaction Search up to 3 h). 400 for a query outside the contract. A provider without a list answers 404 before
 * this is called (Adyen-like).
 */
export function listCharges(ledger: readonly LedgerCharge[], query: URLSearchParams, nowMs: number, lagMs: number): { status: number; body: unknown } {
  const gte = integerParam(query, 'created_gte');
  const lt = integerParam(query, 'created_lt');
  const limit = integerParam(query, 'limit') ?? 10;
  if (gte === undefined || lt === undefined || limit < 1 || limit > 100 || Number.isNaN(gte) || Number.isNaN(lt) || Number.isNaN(limit))
    return { status: 400, body: { error: { type: 'invalid_request_error', message: 'created_gte, created_lt (epoch ms) and limit 1..100 are required' } } };
  const visible = ledger
    .filter((c) => c.atMs >= gte && c.atMs < lt && nowMs - c.atMs >= lagMs)
    .sort((a, b) => a.atMs - b.atMs || compareIds(a.chargeId, b.chargeId));
  const after = query.get('starting_after');
  let from = 0;
  if (after) {
    const anchor = ledger.find((c) => c.chargeId === after);
    if (!anchor) return { status: 400, body: { error: { type: 'invalid_request_error', message: `no such charge: ${after}` } } };
    from = visible.findIndex((c) => c.atMs > anchor.atMs || (c.atMs === anchor.atMs && compareIds(c.chargeId, anchor.chargeId) > 0));
    if (from < 0) from = visible.length;
  }
  const page = visible.slice(from, from + limit);
  return {
    status: 200,
    body: {
      data: page.map((c) => ({
        id: c.chargeId,
        status: chargeStatusAt(c, nowMs),
        amount: c.amount,
        currency: c.currency,
        idempotency_key: c.key,
        created: c.atMs,
      })),
      has_more: from + limit < visible.length,
    },
  };
}

/** Ids compared as the provider orders them (by string; the simulator's `ch_<n>` by their number first). */
function compareIds(a: string, b: string): number {
  const na = Number(a.slice(3));
  const nb = Number(b.slice(3));
  if (a.startsWith('ch_') && b.startsWith('ch_') && Number.isFinite(na) && Number.isFinite(nb)) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}

function integerParam(query: URLSearchParams, name: string): number | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  return /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
}
