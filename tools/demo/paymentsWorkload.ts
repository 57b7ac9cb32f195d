import { ParkReason } from '../../src/messaging/ParkingStore';
import { mulberry32 } from '../fakeProvider/random';

/** What a logical message is meant to test, and so what the consumer must do with it. */
export type PaymentKind =
  /** A valid payment: charged exactly once. */
  | 'charge'
  /** A valid payment of a `decline*` customer: the provider declines it; recorded, never charged. */
  | 'decline'
  /** The paymentId of an earlier payment with another amount, sent after that one was settled: parked `key-reused`. */
  | 'reusedKey'
  /** No retry can fix it: parked with `expectedParkReason`. */
  | 'malformed'
  /**
   * Time phase: the paymentId of a payment completed before the clock jumped past retention, with
   * another amount, sent after the sweep deleted its record: a new payment for its own amount
   * (docs/demo.md, "The time phase").
   */
  | 'reusedAfterExpiry';

/**
 * Time phase: a valid payment every delivery of which fails until the operator's fix (the jump): dead-lettered, then
 * resubmitted after the sweep; `afterCharge` is charged by its first claim, `beforeCharge` never before the DLQ.
 */
export type HeldForOperator = 'beforeCharge' | 'afterCharge';

/** One logical message of the workload (its copies share `index`). */
export interface LogicalMessage {
  readonly index: number;
  readonly kind: PaymentKind;
  readonly messageId: string | undefined;
  readonly body: unknown;
  /**
   * For `reusedKey`: the index of the message whose key it reuses (sent once that one is settled).
   * For `reusedAfterExpiry`: the same, sent by the time phase after the sweep.
   */
  readonly reusesIndex?: number;
  /** Only `charge` messages: failed on every delivery until the time phase (then resubmitted from the DLQ). */
  readonly heldForOperator?: HeldForOperator;
  readonly expectedParkReason?: ParkReason;
  /** Extra unchanged copies the producer sends (its retries). */
  readonly extraCopies: number;
}

/** One send of the plan: a logical message's original or one of its extra copies. */
export interface PlannedSend {
  readonly index: number;
  readonly copy: number;
}

export interface PaymentsWorkload {
  readonly messages: readonly LogicalMessage[];
  /**
   * Sends in order, except those of `reusedKey` messages, which wait for their original to settle,
   * and of `reusedAfterExpiry` ones, which the time phase sends.
   */
  readonly sends: readonly PlannedSend[];
}

export interface WorkloadOptions {
  readonly messages: number;
  /** Extra copies per message: the integer part always, the fraction with that probability (0.3 = 30 % get one). */
  readonly duplicateRate: number;
  readonly seed: number;
  /** Share of declines (default 5 %; 2 % of the messages are malformed, 3 % reused keys). */
  readonly declineShare?: number;
  /** Goes into every paymentId, so runs against one long-lived external provider never share a key. */
  readonly runTag?: string;
  /**
   * Time phase on: some early payments are held for an operator (`heldForOperator`, about 1 %, 2..10)
   * and some late payments become reused keys after expiry of early ones (about 2 %, 2..20).
   */
  readonly timePhase?: boolean;
}

/**
 * A seeded payments workload: payments, declines, malformed messages and reused keys, each message with
 * `duplicateRate` extra copies sent a little later. The same options give the same workload.
 */
export function buildPaymentsWorkload(options: WorkloadOptions): PaymentsWorkload {
  const random = mulberry32(options.seed ^ 0x5eed);
  const [malformed, reused] = [0.02, 0.03];
  const decline = options.declineShare ?? 0.05;
  const messages: LogicalMessage[] = [];
  const reusable: number[] = [];
  const extraCopies = () => Math.floor(options.duplicateRate) + (random() < options.duplicateRate % 1 ? 1 : 0);
  const idOf = (i: number) => `pay-${options.seed}${options.runTag ? `-${options.runTag}` : ''}-${String(i).padStart(6, '0')}`;

  for (let index = 0; index < options.messages; index++) {
    const r = random();
    const amount = 100 + Math.floor(random() * 99_900);
    if (r < malformed) {
      messages.push({
        index,
        kind: 'malformed',
        ...malformedMessage(index, `bad-${options.seed}-${String(index).padStart(6, '0')}`),
        extraCopies: extraCopies(),
      });
    } else if (r < malformed + reused && reusable.length > 0) {
      const original = messages[reusable.splice(Math.floor(random() * reusable.length), 1)[0]];
      const body = original.body as { amount: number };
      messages.push({
        index,
        kind: 'reusedKey',
        messageId: original.messageId,
        body: { ...body, amount: body.amount + 1 + Math.floor(random() * 1000) },
        reusesIndex: original.index,
        expectedParkReason: ParkReason.KeyReused,
        extraCopies: extraCopies(),
      });
    } else {
      const declined = r < malformed + reused + decline;
      const paymentId = idOf(index);
      const customerId = declined ? `decline-${index % 7}` : `cust-${index % 97}`;
      messages.push({
        index,
        kind: declined ? 'decline' : 'charge',
        messageId: paymentId,
        body: { paymentId, customerId, amount, currency: 'EUR' },
        extraCopies: extraCopies(),
      });
      if (!declined) reusable.push(index);
    }
  }

  if (options.timePhase) addTimePhase(messages, reusable, options);

  // Originals in order; each extra copy 1-40 positions after its original (a producer retry).
  const positioned: Array<{ at: number; send: PlannedSend }> = [];
  for (const message of messages) {
    if (message.kind === 'reusedKey' || message.kind === 'reusedAfterExpiry') continue;
    positioned.push({ at: message.index, send: { index: message.index, copy: 0 } });
    for (let copy = 1; copy <= message.extraCopies; copy++) positioned.push({ at: message.index + 0.5 + random() * 40, send: { index: message.index, copy } });
  }
  positioned.sort((a, b) => a.at - b.at);
  return { messages, sends: positioned.map((p) => p.send) };
}

/**
 * The time phase's share of the workload (its own seeded generator, so the rest is unchanged): payments held for an
 * operator among the first 30 % of charges (sent once), and reused keys after expiry: charges of the second half
 * take the paymentId of a charge of the first 40 % (never a `reusedKey` target) with another amount.
 */
function addTimePhase(messages: LogicalMessage[], reusable: number[], options: WorkloadOptions): void {
  const random = mulberry32(options.seed ^ 0x71e);
  const n = options.messages;
  const take = (from: number[], count: number): number[] => {
    const pool = [...from];
    const out: number[] = [];
    while (out.length < count && pool.length > 0) out.push(pool.splice(Math.floor(random() * pool.length), 1)[0]);
    return out.sort((a, b) => a - b);
  };
  const clamp = (x: number, lo: number, hi: number) => Math.max(lo, Math.min(hi, x));
  const held = take(
    reusable.filter((i) => i < 0.3 * n),
    clamp(Math.round(0.01 * n), 2, 10),
  );
  held.forEach((i, k) => {
    messages[i] = { ...messages[i], heldForOperator: k % 2 === 0 ? 'afterCharge' : 'beforeCharge', extraCopies: 0 };
  });
  const count = clamp(Math.round(0.02 * n), 2, 20);
  const originals = take(
    reusable.filter((i) => i < 0.4 * n && !held.includes(i)),
    count,
  );
  const slots = take(
    reusable.filter((i) => i >= 0.5 * n),
    originals.length,
  );
  slots.forEach((slot, k) => {
    const original = messages[originals[k]];
    const body = original.body as { amount: number };
    messages[slot] = {
      index: slot,
      kind: 'reusedAfterExpiry',
      messageId: original.messageId,
      body: { ...body, amount: body.amount + 1 + Math.floor(random() * 1000) },
      reusesIndex: original.index,
      extraCopies: messages[slot].extraCopies,
    };
  });
}

function malformedMessage(index: number, id: string): Pick<LogicalMessage, 'messageId' | 'body' | 'expectedParkReason'> {
  switch (index % 4) {
    case 0:
      return { messageId: id, body: `{"paymentId": "${id}", "amount": `, expectedParkReason: ParkReason.InvalidJson };
    case 1:
      return { messageId: id, body: { paymentId: id, customerId: 'cust-1', amount: 12.5, currency: 'EUR' }, expectedParkReason: ParkReason.InvalidSchema };
    case 2:
      return {
        messageId: `${id}-other`,
        body: { paymentId: id, customerId: 'cust-1', amount: 1000, currency: 'EUR' },
        expectedParkReason: ParkReason.MessageIdMismatch,
      };
    default:
      return {
        messageId: undefined,
        body: { paymentId: id, customerId: 'cust-1', amount: 1000, currency: 'EUR' },
        expectedParkReason: ParkReason.MissingMessageId,
      };
  }
}
