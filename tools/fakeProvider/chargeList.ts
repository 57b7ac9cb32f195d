import type { IncomingMessage, ServerResponse } from 'node:http';

import { json } from './httpBody';
import { delay } from './random';

/** A charge the fake provider made: its ledger's entry. */
export interface ChargeRecord {
  readonly chargeId: string;
  readonly paymentId: string;
  readonly idempotencyKey: string;
  readonly amount: number;
  readonly currency: string;
  /** When the provider made it, on its clock (epoch ms). */
  readonly createdMs: number;
}

/** The faults a look-up or a list page can suffer (FakePaymentProvider's `LookupFault`). */
type LookupFault = 'error5xx' | 'timeout';

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

/** What {@link serveCharges} needs of the provider: its ledger, what it offers, its counters and its faults. */
export interface ChargesEndpoint {
  readonly charges: readonly ChargeRecord[];
  readonly offered: { readonly lookup: boolean; readonly list: boolean };
  readonly latencyMs?: number;
  readonly count: (kind: 'lookup' | 'list') => void;
  /** The next fault (queued, else drawn), counted here in `faults`. */
  readonly nextFault: () => LookupFault | undefined;
  readonly faults: Record<LookupFault, number>;
  readonly answered: (res: ServerResponse, fault: LookupFault | undefined) => boolean;
}

/**
 * `GET /v1/charges?idempotency_key=K`: the ledger's charges under K (key memory plays no part). `GET
 * /v1/charges?created_gte=&created_lt=&limit=[&starting_after=]`: {@link chargeListPage}. Either answers 404 when not
 * offered (Stripe has no look-up by key; Adyen no list), 400 when malformed; faults as a look-up's (5xx, timeouts).
 */
export async function serveCharges(req: IncomingMessage, res: ServerResponse, endpoint: ChargesEndpoint): Promise<void> {
  const params = new URL(req.url ?? '', 'http://provider').searchParams;
  const kind = params.has('idempotency_key') ? 'lookup' : 'list';
  endpoint.count(kind);
  if (!endpoint.offered[kind]) return json(res, 404, { error: { type: 'invalid_request_error', message: 'Unrecognized request URL (GET: /v1/charges)' } });
  const key = params.get('idempotency_key');
  const query = listQueryOf(params);
  if (kind === 'lookup' && !key) return json(res, 400, { error: { message: 'idempotency_key is required' } });
  if (kind === 'list' && 'error' in query) return json(res, 400, { error: { message: query.error } });
  const fault = endpoint.nextFault();
  if (fault) endpoint.faults[fault]++;
  if (endpoint.latencyMs) await delay(endpoint.latencyMs);
  if (endpoint.answered(res, fault)) return;
  if (kind === 'lookup') {
    const data = endpoint.charges.filter((c) => c.idempotencyKey === key).map((c) => ({ ...listed(c), paymentId: c.paymentId, idempotencyKey: key }));
    return json(res, 200, { object: 'list', data });
  }
  const page = chargeListPage(endpoint.charges, query as Exclude<ListQuery, { error: string }>);
  return json(res, page.status, page.body);
}
