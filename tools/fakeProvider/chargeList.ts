import type { ChargeRecord } from './FakePaymentProvider';

/** What the list's query asked for, or why it is malformed. */
export type ListQuery = { readonly fromMs: number; readonly toMs: number; readonly limit: number; readonly after?: string } | { readonly error: string };

/** Reads `created_gte`, `created_lt` (epoch ms), `limit` (1-100, default 10 as Stripe) and `starting_after`. */
export function listQueryOf(params: URLSearchParams): ListQuery {
  const fromMs = Number(params.get('created_gte') ?? Number.NaN);
  const toMs = Number(params.get('created_lt') ?? Number.NaN);
  const limit = Number(params.get('limit') ?? 10);
  if (!Number.isFinite(fromMs) || !Number.isFinite(toMs) || !Number.isInteger(limit) || limit < 1 || limit > 100)
    return { error: 'created_gte and created_lt (epoch ms) and limit (1-100) are required' };
  const after = params.get('starting_after');
  return after ? { fromMs, toMs, limit, after } : { fromMs, toMs, limit };
}

/** A charge as the list and the look-up show it (the contract's fields). */
export function listed(c: ChargeRecord) {
  return { id: c.chargeId, status: 'succeeded', amount: c.amount, currency: c.currency, idempotency_key: c.idempotencyKey, created: c.createdMs };
}

/**
 * One page of `charges` for `query`: those created in [fromMs, toMs), ascending by (created, id), at most `limit`,
 * after the charge `after` (wherever it was created); `has_more` when more follow. 400 for an unknown `after`.
 */
export function chargeListPage(charges: readonly ChargeRecord[], query: Exclude<ListQuery, { error: string }>): { status: number; body: unknown } {
  const ordered = charges.filter((c) => c.createdMs >= query.fromMs && c.createdMs < query.toMs).sort(byCreatedThenId);
  let start = 0;
  if (query.after) {
    const anchor = charges.find((c) => c.chargeId === query.after);
    if (!anchor) return { status: 400, body: { error: { message: `No such charge: ${query.after}` } } };
    start = ordered.findIndex((c) => byCreatedThenId(c, anchor) > 0);
    if (start < 0) start = ordered.length;
  }
  const page = ordered.slice(start, start + query.limit);
  return { status: 200, body: { object: 'list', data: page.map(listed), has_more: start + query.limit < ordered.length } };
}

/** The list's order: by creation time, then by id. */
function byCreatedThenId(a: ChargeRecord, b: ChargeRecord): number {
  return a.createdMs - b.createdMs || (a.chargeId < b.chargeId ? -1 : a.chargeId > b.chargeId ? 1 : 0);
}
