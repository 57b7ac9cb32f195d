import { InvocationContext } from '@azure/functions';
import type { PaymentRequested } from '../../src/payments/schema';
import type { Random } from './random';
import { HostProcess, runInProcess, type World } from './world';

/** A message on the payments queue. */
export interface BusMessage {
  readonly messageId: string;
  readonly body: PaymentRequested;
  readonly sequence: number;
  deliveryCount: number;
  state: 'active' | 'locked' | 'completed' | 'dead';
  /** Each delivery takes a new lock; a settlement with an older one fails (the lock was lost). */
  lock: number;
  deadReason?: string;
}

export interface BusOptions {
  readonly lockMs: number;
  readonly maxAutoLockRenewalMs: number;
  readonly maxDeliveryCount: number;
  readonly duplicateDetectionMs: number;
  lockLostRate: number;
  /** The Functions host running a delivery dies (scale-in, a restart, out of memory) while the invocation is in flight. */
  hostCrashRate: number;
  /** Resubmit each dead-lettered message (an operator), hours later. */
  readonly resubmit: boolean;
}

/** The trigger as the bus calls it: returning completes the message, throwing abandons it. */
export type Trigger = (body: unknown, context: InvocationContext) => Promise<unknown>;

/**
 * A Service Bus queue with peek-lock as the Functions host drives it: each delivery locks the message; the host
 * renews the lock up to `maxAutoLockRenewalMs`, after which (or when the renewal fails: a fault) the lock is lost and
 * the message is delivered again while the first delivery still runs. A handler that throws abandons it (delivered
 * again, count + 1); past `maxDeliveryCount` it is dead-lettered. Duplicate detection drops a MessageId sent again
 * within its window; an operator's resubmission (a fault) sends a dead-lettered message again hours later.
 */
export class SimBus {
  readonly messages: BusMessage[] = [];
  private readonly sentAtMs = new Map<string, number>();
  trigger?: Trigger;
  deliveries = 0;
  /** Deliveries whose host died mid-invocation. */
  hostCrashes = 0;
  /** Draws of the host crashes (their own generator: a schedule without them draws nothing from it). */
  crashes?: Random;
  /** A scenario's forced fault: the host of each next delivery dies these many ms into it. */
  readonly forceCrashAfterMs: number[] = [];

  constructor(
    private readonly world: World,
    private readonly random: Random,
    private readonly options: BusOptions,
  ) {}

  /** No more faults (the schedule's quiet phase). */
  quiet(): void {
    this.options.lockLostRate = 0;
    this.options.hostCrashRate = 0;
  }

  /** The producer sends (or sends again); false when duplicate detection dropped it. */
  send(messageId: string, body: PaymentRequested): boolean {
    const last = this.sentAtMs.get(messageId);
    if (last !== undefined && this.world.nowMs() - last < this.options.duplicateDetectionMs) {
      this.world.log(`bus: ${messageId} sent again, dropped by duplicate detection`);
      return false;
    }
    this.sentAtMs.set(messageId, this.world.nowMs());
    const message: BusMessage = { messageId, body, sequence: this.messages.length + 1, deliveryCount: 0, state: 'active', lock: 0 };
    this.messages.push(message);
    this.world.log(`bus: ${messageId} sent (#${message.sequence})`);
    this.world.at(this.world.nowMs() + this.random.logBetween(5, 500), () => void this.deliver(message));
    return true;
  }

  private async deliver(message: BusMessage): Promise<void> {
    if (message.state !== 'active') return;
    if (message.deliveryCount >= this.options.maxDeliveryCount) return this.deadLetter(message, 'MaxDeliveryCountExceeded');
    message.deliveryCount++;
    message.state = 'locked';
    const lock = ++message.lock;
    this.deliveries++;
    const lostAtMs = this.random.chance(this.options.lockLostRate)
      ? this.world.nowMs() + this.random.logBetween(1_000, this.options.maxAutoLockRenewalMs)
      : this.world.nowMs() + this.options.maxAutoLockRenewalMs + this.options.lockMs;
    this.world.at(lostAtMs, () => {
      if (message.state !== 'locked' || message.lock !== lock) return;
      this.world.log(`bus: ${message.messageId} lock lost during delivery ${message.deliveryCount}`);
      message.state = 'active';
      void this.deliver(message);
    });
    const context = new InvocationContext({
      invocationId: `sim-${message.sequence}-${message.deliveryCount}`,
      functionName: 'paymentsConsumer',
      triggerMetadata: { messageId: message.messageId, deliveryCount: message.deliveryCount, correlationId: `corr-${message.messageId}` },
      logHandler: () => undefined,
    });
    const process = new HostProcess(context.invocationId);
    let settled = false;
    const forced = this.forceCrashAfterMs.shift();
    if (forced !== undefined || this.crashes?.chance(this.options.hostCrashRate)) this.crashDuring(message, lock, process, () => settled, forced);
    let failure: unknown;
    try {
      await runInProcess(process, () => this.trigger!(message.body, context));
    } catch (error) {
      failure = error;
    }
    settled = true;
    if (message.state !== 'locked' || message.lock !== lock) return; // the settlement fails: the lock was lost
    if (failure === undefined) {
      message.state = 'completed';
      this.world.log(`bus: ${message.messageId} completed (delivery ${message.deliveryCount})`);
      return;
    }
    const why = failure instanceof Error ? `${failure.name}: ${failure.message}` : JSON.stringify(failure);
    this.world.log(`bus: ${message.messageId} abandoned (delivery ${message.deliveryCount}): ${why.slice(0, 120)}`);
    message.state = 'active';
    this.world.at(this.world.nowMs() + this.random.logBetween(5, 200), () => void this.deliver(message));
  }

  /**
   * The host dies while the delivery runs (Service Bus: a receiver that crashes holding a peek-lock leaves the message
   * to its lock's expiry, then delivers it again): the invocation stops where it stands (its requests on the way still
   * land), nothing renews the lock, the message comes back within one lock duration, its delivery count one higher.
   */
  private crashDuring(message: BusMessage, lock: number, process: HostProcess, settled: () => boolean, afterMs?: number): void {
    const crashes = this.crashes!;
    const diesAtMs = this.world.nowMs() + (afterMs ?? crashes.logBetween(2, 5_000));
    const lockEndsAtMs = diesAtMs + crashes.logBetween(1_000, this.options.lockMs);
    this.world.at(diesAtMs, () => {
      if (settled() || message.lock !== lock) return;
      process.dead = true;
      this.hostCrashes++;
      this.world.log(`bus: the host running ${message.messageId}'s delivery ${message.deliveryCount} died`);
    });
    this.world.at(lockEndsAtMs, () => {
      if (!process.dead || message.state !== 'locked' || message.lock !== lock) return;
      this.world.log(`bus: ${message.messageId}'s lock expired (delivery ${message.deliveryCount}'s host is gone)`);
      message.state = 'active';
      void this.deliver(message);
    });
  }

  private deadLetter(message: BusMessage, reason: string): void {
    message.state = 'dead';
    message.deadReason = reason;
    this.world.log(`bus: ${message.messageId} dead-lettered (${reason})`);
    if (this.options.resubmit) {
      this.world.at(this.world.nowMs() + this.random.logBetween(3_600_000, 20 * 3_600_000), () => {
        this.world.log(`bus: operator resubmits ${message.messageId} from the dead-letter queue`);
        message.state = 'completed'; // moved out of the dead-letter queue
        this.send(message.messageId, message.body);
      });
    }
  }

  /** MessageIds in the dead-letter queue now (the expiry sweep holds their records). */
  deadLettered(): Set<string> {
    return new Set(this.messages.filter((m) => m.state === 'dead').map((m) => m.messageId));
  }
}
