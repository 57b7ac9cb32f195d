import type { DeadLetteredMessage } from '../local/LocalQueue';
import type { DeliveryEvent } from '../local/LocalServiceBus';

/** The demo's tag on every send: which consumer's workload, which logical message, which copy. */
export interface SendTag {
  readonly part: string;
  readonly index: number;
  readonly copy: number;
}

/** What happened to one logical message, over all its copies and deliveries. */
export interface MessageFate {
  copiesSent: number;
  copiesDropped: number;
  deliveries: number;
  /** Results of deliveries whose completion the broker accepted. */
  readonly completions: unknown[];
  /** The ledger's epoch at each completion (same order): 0 before the time phase's jump, 1 from it. */
  readonly completionEpochs: number[];
  /** Copies in the dead-letter queue now (a resubmitted copy leaves it). */
  readonly deadLettered: DeadLetteredMessage<SendTag>[];
  /** Copies an operator resubmitted from the dead-letter queue. */
  resubmitted: number;
}

/**
 * Everything the engine reported, per consumer and logical message, plus totals by event kind.
 * The invariants are checked against it (and against the provider's own count).
 */
export class Ledger {
  private readonly fates = new Map<string, MessageFate>();
  readonly events: Record<DeliveryEvent['kind'], number> = { completed: 0, abandoned: 0, crashed: 0, ackLost: 0, lockLost: 0 };
  redeliveries = 0;
  deliveries = 0;
  /** 0 until the time phase jumps the clock, then 1: completions remember it. */
  epoch = 0;

  fate(part: string, index: number): MessageFate {
    const key = `${part}\u0000${index}`;
    let fate = this.fates.get(key);
    if (!fate)
      this.fates.set(key, (fate = { copiesSent: 0, copiesDropped: 0, deliveries: 0, completions: [], completionEpochs: [], deadLettered: [], resubmitted: 0 }));
    return fate;
  }

  recordSend(tag: SendTag, accepted: boolean): void {
    const fate = this.fate(tag.part, tag.index);
    if (accepted) fate.copiesSent++;
    else fate.copiesDropped++;
  }

  recordDelivery(event: DeliveryEvent<SendTag>): void {
    const tag = event.locked.message.tag!;
    const fate = this.fate(tag.part, tag.index);
    fate.deliveries++;
    this.deliveries++;
    if (event.locked.deliveryCount > 1) this.redeliveries++;
    this.events[event.kind]++;
    if (event.kind === 'completed') {
      fate.completions.push(event.result);
      fate.completionEpochs.push(this.epoch);
    }
  }

  recordDeadLetter(message: DeadLetteredMessage<SendTag>): void {
    const tag = message.message.tag!;
    this.fate(tag.part, tag.index).deadLettered.push(message);
  }

  /** An operator resubmitted this dead-lettered copy: it leaves the DLQ and is a live message again. */
  recordResubmit(message: DeadLetteredMessage<SendTag>): void {
    const tag = message.message.tag!;
    const fate = this.fate(tag.part, tag.index);
    const at = fate.deadLettered.findIndex((d) => d.sequenceNumber === message.sequenceNumber);
    if (at >= 0) fate.deadLettered.splice(at, 1);
    fate.resubmitted++;
  }
}
