import { payloadDigest } from 'azure-functions-idempotency/internal';
import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';
import type { ChargeResult } from '../../src/payments/schema';
import type { Ledger, MessageFate } from './ledger';
import type { LogicalMessage } from './paymentsWorkload';

/** paymentId -> the completed record's digest and result, as read at one moment. */
export type FinalResults = Map<string, { readonly digest: string; readonly result: ChargeResult }>;

/** Orchestration instance id -> the outcome its `paymentCharge` entity recorded (completed, or failed with a reason). */
export type EntityOutcomes = Map<string, ChargeResult>;

/**
 * The ledger as the payments checks read it, with the handoff's acknowledgements (`handedOff`, `inProgress`) resolved
 * to `processed` / `duplicate` with what the run recorded for this message's payload (read before the time phase's
 * sweep, or at the end); one with no such result stays as it was, and the checks report it as a lost payment.
 */
export function resolveHandOffs(
  ledger: Pick<Ledger, 'fate'>,
  part: string,
  messages: readonly LogicalMessage[],
  beforeSweep: FinalResults,
  atEnd: FinalResults,
  entities: EntityOutcomes = new Map(),
  fromEntity: Set<number> = new Set(),
): Pick<Ledger, 'fate'> {
  const resolved = new Map<number, MessageFate>();
  return {
    fate(p: string, index: number): MessageFate {
      const fate = ledger.fate(p, index);
      if (p !== part) return fate;
      const cached = resolved.get(index);
      if (cached) return cached;
      const m = messages[index];
      const digest = m?.messageId !== undefined && typeof m.body === 'object' ? safeDigest(m.body) : undefined;
      const completions = (fate.completions as PaymentDeliveryResult[]).map((r, i) => {
        if (r.outcome !== 'handedOff' && r.outcome !== 'inProgress') return r;
        const id = String(m.messageId);
        const found = [fate.completionEpochs[i] === 0 ? beforeSweep.get(id) : undefined, atEnd.get(id)].find((x) => x !== undefined && x.digest === digest);
        // The record may be gone: the time phase's jump expires records whose runs are still in flight (a run never
        // outlives retention in real time). The lifetime's entity then holds the run's outcome.
        const entity = found ? undefined : entities.get(r.instanceId);
        if (entity) fromEntity.add(index);
        const result = found?.result ?? entity;
        if (!result) return r;
        return { outcome: r.outcome === 'handedOff' ? 'processed' : 'duplicate', result };
      });
      const copy = { ...fate, completions };
      resolved.set(index, copy);
      return copy;
    },
  };
}

function safeDigest(body: unknown): string | undefined {
  try {
    return payloadDigest(body);
  } catch {
    return undefined;
  }
}

/** The instance ids of the handoff acknowledgements in the ledger (each one's entity key is the id without `payment-`). */
export function handedOffInstances(ledger: Pick<Ledger, 'fate'>, part: string, messages: readonly LogicalMessage[]): string[] {
  const ids = new Set<string>();
  for (const m of messages)
    for (const r of ledger.fate(part, m.index).completions as PaymentDeliveryResult[])
      if (r.outcome === 'handedOff' || r.outcome === 'inProgress') ids.add(r.instanceId);
  return [...ids];
}
