import { payloadDigest } from 'azure-functions-idempotency/internal';
import { bodyBytes, ParkReason } from '../../src/messaging';
import { Outcome } from '../../src/messaging/reportOutcome';
import type { OrderAuditDocument, OrderDocument, OrderLineDocument } from '../../src/orders/documents';
import { orderPlacedSchema } from '../../src/orders/messages';
import type { QueueMessage } from '../local/LocalQueue';
import { startOrdersRig, type OrdersRig } from '../local/ordersRig';
import { CrashPoint } from './faults';
import type { Ledger, SendTag } from './ledger';
import { buildOrdersWorkload, statusOfVersion, type OrderLogicalMessage } from './ordersWorkload';
import { sendsOf, type ChaosEnvironment, type ChaosPart, type PartReport } from './part';

export interface OrdersPartOptions {
  readonly messages: number;
  readonly duplicateRate: number;
  /** Cosmos endpoint of the run (the in-process emulator on loopback). */
  readonly cosmosEndpoint: string;
  /** The queue's max delivery count (the handler parks a status for a missing order on that delivery). */
  readonly maxDeliveryCount: number;
}

const PART = 'orders';

/**
 * The orders consumer in the chaos run (docs/demo.md, "Orders in the chaos run"): the real handler on the Cosmos
 * emulator (`ordersRig.ts`), parking on Azurite behind the outage proxy, crashes before the handler and after its
 * batch committed. Invariants, checked against the emulator's own documents: every valid order exactly once with its
 * lines and one audit entry, reused keys and malformed messages parked with their reason, each order's status at the
 * highest version that completed (a range when one is only in the DLQ), nothing lost.
 */
export async function startOrdersPart(env: ChaosEnvironment, options: OrdersPartOptions): Promise<ChaosPart> {
  const workload = buildOrdersWorkload({ messages: options.messages, duplicateRate: options.duplicateRate, seed: env.seed });
  const rig = await startOrdersRig({
    cosmosEndpoint: options.cosmosEndpoint,
    tableConnectionString: env.tableConnectionString,
    maxDeliveryCount: options.maxDeliveryCount,
  });
  // What the handler returned, every time it returned (also when the ack or the lock was lost afterwards).
  const handlerOutcomes: Record<string, number> = {};
  injectCrashes(rig, env);

  const send = (message: OrderLogicalMessage, copy: number): QueueMessage<SendTag> => ({
    messageId: message.messageId,
    body: message.body,
    correlationId: `chaos-${env.seed}`,
    ...(message.applicationProperties ? { applicationProperties: message.applicationProperties } : {}),
    tag: { part: PART, index: message.index, copy },
  });
  const waiting = new Map(workload.afterOrder);
  const withheld = new Set<number>();

  return {
    consumer: {
      name: PART,
      queue: PART,
      deliver: async (body, meta) => {
        env.faults.maybeCrash(CrashPoint.BeforeClaim, `${PART}:${String(meta.messageId)}`);
        const outcome = await rig.deliver(body, meta);
        handlerOutcomes[outcome] = (handlerOutcomes[outcome] ?? 0) + 1;
        return outcome;
      },
    },
    initialSends: workload.initialSends.map((s) => send(workload.messages[s.index], s.copy)),
    plannedSends: sendsOf(workload.messages),
    sendsAfterSettled(index, settled) {
      const released = waiting.get(index) ?? [];
      waiting.delete(index);
      if (settled === 'deadLettered') {
        // The order was never placed by this message: its statuses would only wait for it, and a
        // "reuse" of its id would be the id's first use. Not sent (an operator resubmits the order first).
        for (const s of released) withheld.add(s.index);
        return [];
      }
      return released.map((s) => send(workload.messages[s.index], s.copy));
    },
    withheldSends: () => sendsOf([...withheld].map((i) => workload.messages[i])),
    drain: async () => undefined,
    verify: async (ledger) => {
      try {
        return await verifyOrders(rig, workload.messages, ledger, withheld, handlerOutcomes);
      } finally {
        await rig.stop();
      }
    },
  };
}

/** A crash after the batch that created the order committed (the order exists; the handler never returns). */
function injectCrashes(rig: OrdersRig, env: ChaosEnvironment): void {
  const store = rig.store;
  const placeOrder = store.placeOrder.bind(store);
  store.placeOrder = async (placement) => {
    const result = await placeOrder(placement);
    if (result.kind === 'created') env.faults.maybeCrash(CrashPoint.AfterClaim, `${PART}:${placement.order.orderId}`);
    return result;
  };
}

type Doc = (OrderDocument | OrderLineDocument | OrderAuditDocument) & Record<string, unknown>;

async function verifyOrders(
  rig: OrdersRig,
  messages: readonly OrderLogicalMessage[],
  ledger: Ledger,
  withheld: ReadonlySet<number>,
  handlerOutcomes: Readonly<Record<string, number>>,
): Promise<PartReport> {
  const violations: string[] = [];
  const lostMessages: string[] = [];
  const label = (m: OrderLogicalMessage) => `#${m.index} ${m.kind} ${m.messageId ?? '(no MessageId)'}`;
  const orders = messages.filter((m) => m.kind === 'order');
  const statuses = messages.filter((m) => m.kind === 'status');
  let duplicatesDetected = 0;
  let deadLetteredOnly = 0;
  let earlyParked = 0;
  let earlyApplied = 0;

  // 1. Every logical message: completed with an expected outcome, dead-lettered, withheld or dropped.
  const expectedOutcomes = (m: OrderLogicalMessage): readonly string[] => {
    switch (m.kind) {
      case 'order':
        return [Outcome.Processed, Outcome.Duplicate];
      case 'reusedKey':
        return [Outcome.KeyReused];
      case 'malformed':
        return [Outcome.Parked];
      case 'status':
        // An early status may find no order until its last delivery: then it is parked order-not-found.
        return m.early ? [Outcome.Applied, Outcome.StaleVersion, Outcome.Parked] : [Outcome.Applied, Outcome.StaleVersion];
    }
  };
  for (const m of messages) {
    const fate = ledger.fate(PART, m.index);
    const results = fate.completions as string[];
    duplicatesDetected += results.filter((r) => r === Outcome.Duplicate).length;
    const allowed = expectedOutcomes(m);
    for (const r of results.filter((x) => !allowed.includes(x))) violations.push(`${label(m)} was completed as ${JSON.stringify(r)}`);
    if (m.kind === 'status' && m.early) {
      if (results.includes(Outcome.Parked)) earlyParked++;
      if (results.includes(Outcome.Applied)) earlyApplied++;
    }
    if (results.some((r) => allowed.includes(r))) continue;
    if (fate.deadLettered.length > 0) deadLetteredOnly++;
    else if (!withheld.has(m.index) && !(fate.copiesSent === 0 && fate.copiesDropped > 0)) lostMessages.push(label(m));
  }

  // 2. The emulator's own documents.
  const docs = await rig.allDocuments<Doc>();
  const byOrder = new Map<string, Doc[]>();
  for (const d of docs) byOrder.set(String(d.orderId), [...(byOrder.get(String(d.orderId)) ?? []), d]);
  const validIds = new Set(orders.map((m) => m.messageId!));
  for (const id of byOrder.keys()) if (!validIds.has(id)) violations.push(`documents exist for ${JSON.stringify(id)}, which is no valid order of this run`);
  const doubleEffects: string[] = [];
  let ordersCreated = 0;
  let ordersMissing = 0;
  const statusesOf = new Map<number, OrderLogicalMessage[]>();
  for (const s of statuses) statusesOf.set(s.orderIndex!, [...(statusesOf.get(s.orderIndex!) ?? []), s]);
  let statusExact = 0;
  let statusUncertain = 0;

  for (const m of orders) {
    const orderId = m.messageId!;
    const own = byOrder.get(orderId) ?? [];
    const orderDocs = own.filter((d): d is OrderDocument & Record<string, unknown> => d.kind === 'order');
    const lineDocs = own.filter((d): d is OrderLineDocument & Record<string, unknown> => d.kind === 'line');
    const auditDocs = own.filter((d): d is OrderAuditDocument & Record<string, unknown> => d.kind === 'audit');
    const fate = ledger.fate(PART, m.index);
    const completed = (fate.completions as string[]).some((r) => r === Outcome.Processed || r === Outcome.Duplicate);
    if (orderDocs.length === 0) {
      // Only an OrderPlaced that never completed (dead-lettered) may have left no order.
      if (completed) violations.push(`${label(m)} completed but the order does not exist`);
      if (own.length > 0) violations.push(`${label(m)} has ${own.length} line/audit document(s) without its order document`);
      ordersMissing++;
      continue;
    }
    ordersCreated++;
    if (orderDocs.length > 1) doubleEffects.push(orderId);
    const placed = orderPlacedSchema.parse(m.body);
    const digest = payloadDigest(placed);
    const order = orderDocs[0];
    const want = {
      customerId: placed.customerId,
      currency: placed.currency,
      itemCount: placed.items.length,
      totalMinor: placed.items.reduce((s, i) => s + i.quantity * i.unitPrice, 0),
    };
    if (order.idempotency?.digest !== digest)
      violations.push(`${label(m)}: order digest ${order.idempotency?.digest} is not that of its first payload ${digest}`);
    for (const [k, v] of Object.entries(want))
      if ((order as unknown as Record<string, unknown>)[k] !== v)
        violations.push(`${label(m)}: order ${k} is ${JSON.stringify((order as unknown as Record<string, unknown>)[k])}, expected ${JSON.stringify(v)}`);
    if (lineDocs.length !== placed.items.length) violations.push(`${label(m)}: ${lineDocs.length} line documents for ${placed.items.length} items`);
    for (const [lineNo, item] of placed.items.entries()) {
      const line = lineDocs.filter((l) => l.lineNo === lineNo);
      if (line.length !== 1 || line[0].sku !== item.sku || line[0].quantity !== item.quantity || line[0].unitPrice !== item.unitPrice) {
        violations.push(
          `${label(m)}: line ${lineNo} is ${JSON.stringify(line.map((l) => [l.sku, l.quantity, l.unitPrice]))}, expected ${JSON.stringify([item.sku, item.quantity, item.unitPrice])}`,
        );
      }
    }
    if (auditDocs.length !== 1 || auditDocs[0].digest !== digest)
      violations.push(`${label(m)}: ${auditDocs.length} audit entries (expected 1 with the order's digest)`);

    // Status: the highest version whose message completed as applied or ignored; a version whose
    // message only reached the DLQ may or may not have been applied before (a range).
    let lower = 0;
    let upper = 0;
    for (const s of statusesOf.get(m.index) ?? []) {
      const f = ledger.fate(PART, s.index);
      const results = f.completions as string[];
      if (results.includes(Outcome.Applied) || results.includes(Outcome.StaleVersion)) {
        lower = Math.max(lower, s.version!);
        upper = Math.max(upper, s.version!);
      } else if (f.deadLettered.length > 0) {
        upper = Math.max(upper, s.version!);
      }
    }
    const version = order.statusVersion;
    if (lower === upper) statusExact++;
    else statusUncertain++;
    if (version < lower || version > upper) {
      violations.push(`${label(m)}: statusVersion ${version}, expected ${lower === upper ? lower : `${lower}..${upper}`}`);
    } else if (order.status !== statusOfVersion(version)) {
      violations.push(`${label(m)}: status ${order.status} at version ${version}, expected ${statusOfVersion(version)}`);
    }
  }

  // 3. Parking: malformed with their reason, reused keys with key-reused, early statuses that found no order.
  const parked = await rig.parking.list(rig.consumer);
  const parkedByReason: Record<string, number> = {};
  for (const p of parked) parkedByReason[p.reason] = (parkedByReason[p.reason] ?? 0) + 1;
  const isParked = (m: OrderLogicalMessage, reason: string) => {
    const body = bodyBytes(m.body);
    return parked.some((p) => p.reason === reason && p.body.equals(body) && (m.messageId === undefined ? p.messageId === '' : p.messageId === m.messageId));
  };
  for (const m of messages) {
    const fate = ledger.fate(PART, m.index);
    if (m.kind === 'malformed' || m.kind === 'reusedKey') {
      if (fate.copiesSent === 0 || (fate.completions.length === 0 && fate.deadLettered.length > 0)) continue;
      if (!isParked(m, m.expectedParkReason!)) violations.push(`${label(m)} is not parked with reason ${m.expectedParkReason}`);
    } else if (m.kind === 'status' && (fate.completions as string[]).includes(Outcome.Parked) && !isParked(m, ParkReason.OrderNotFound)) {
      violations.push(`${label(m)} completed as parked but is not parked with reason ${ParkReason.OrderNotFound}`);
    }
  }

  return {
    name: PART,
    messages: messages.length,
    unique: orders.length,
    duplicatesDetected,
    parkedByReason,
    lostMessages,
    doubleEffects,
    violations,
    details: {
      ordersCreated,
      ordersMissing,
      statusMessages: statuses.length,
      earlyStatuses: statuses.filter((s) => s.early).length,
      earlyStatusesParked: earlyParked,
      earlyStatusesApplied: earlyApplied,
      statusApplied: handlerOutcomes[Outcome.Applied] ?? 0,
      staleVersionsIgnored: handlerOutcomes[Outcome.StaleVersion] ?? 0,
      ordersStatusExact: statusExact,
      ordersStatusUncertain: statusUncertain,
      malformed: messages.filter((m) => m.kind === 'malformed').length,
      reusedKeys: messages.filter((m) => m.kind === 'reusedKey').length,
      withheld: withheld.size,
      deadLetteredWithoutCompletion: deadLetteredOnly,
      documents: docs.length,
      handlerOutcomes: { ...handlerOutcomes },
    },
  };
}
