import { systemClock, type Clock } from '../protocol/clock';
import type { ConsumerExtension } from './recordState';

/** What every operator function takes besides its own options. */
export interface OperatorOptions {
  /** Time source (default: the system clock): the lease and retention are judged by it. */
  readonly clock?: Clock;
  /** The app's extensions, one per consumer at most (see {@link ConsumerExtension}). */
  readonly extensions?: readonly ConsumerExtension[];
}

/**
 * One line of the operator's audit trail: who changed which record, why, when. Key and digest identify the message;
 * never a payload. A release also leaves who and why on the record (`lastError`); an eviction leaves nothing on the
 * store, so this line is its only trace: keep it (the CLI prints it on stderr as JSON).
 */
export interface OperatorAudit {
  readonly action: 'release' | 'evict' | 'replay-release' | 'replay-resend';
  /** ISO time of the change. */
  readonly at: string;
  readonly by: string;
  readonly reason: string;
  readonly consumer: string;
  readonly key: string;
  readonly digest: string;
  /** The record's status and attempt before the change. */
  readonly status: string;
  readonly attempt: number;
  /** Forced past a refusal (`evict --force`). */
  readonly forced?: boolean;
}

/** The clock of `options` (the system's by default). */
export function clockOf(options: OperatorOptions | undefined): Clock {
  return options?.clock ?? systemClock;
}
