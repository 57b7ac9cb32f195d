import { createHash } from 'node:crypto';
import type { TableClient, TableEntity } from '@azure/data-tables';
import { systemClock, type Clock } from '../core/clock';
import { DEFAULT_STORE_TIMEOUT_MS, withDeadline } from '../core/deadline';
import { integerOption, MAX_STORE_TIMEOUT_MS } from '../core/options';
import { toDomainError } from '../core/storeErrors';
import { bodyBytes } from './bodyBytes';
import { messageIdText, type MessageInfo } from './messageInfo';

/** Why a message cannot be processed however often it is retried: it is parked with this reason. */
export const ParkReason = {
  InvalidJson: 'invalid-json',
  InvalidSchema: 'invalid-schema',
  MissingMessageId: 'missing-message-id',
  MessageIdMismatch: 'message-id-mismatch',
  Oversized: 'oversized',
  KeyReused: 'key-reused',
  /** An update for an entity that never arrived, still missing on the last delivery. */
  OrderNotFound: 'order-not-found',
  /** A stream event without a stable identity (not a CloudEvent, or one without `source` / `id`). */
  MissingEventId: 'missing-event-id',
} as const;
export type ParkReason = (typeof ParkReason)[keyof typeof ParkReason];

/** Table string properties hold 32K UTF-16 characters; the body is stored base64 in chunks of this size. */
const CHUNK_CHARS = 32_000;
/** At most this many body bytes are kept (an entity holds 1 MiB); longer bodies are kept truncated and say so. */
export const MAX_PARKED_BODY_BYTES = 600 * 1024;

/** A message set aside for an operator, with everything needed to inspect and resubmit it. */
export interface ParkedMessage {
  readonly consumer: string;
  readonly reason: ParkReason;
  /** A specific explanation (which field failed, which digests differ); never the payload itself. */
  readonly detail: string;
  readonly info: MessageInfo;
  /** The delivered body, kept so nothing is lost. */
  readonly body: unknown;
}

/**
 * Parks messages that no retry can fix (malformed, reused keys) in a Table, so the consumer can
 * complete them and keep going while nothing is lost: the body is kept (base64, chunked), with
 * the reason, message id, correlation id and delivery count. Parking is idempotent: a redelivered
 * message parked before overwrites its own row (RowKey = hash of consumer, message id and body).
 *
 * Rows: PartitionKey = consumer; RowKey = SHA-256 hex. Operators list a consumer's partition.
 */
export class ParkingStore {
  /** Deadline of each call (SDK retries included), then `StoreUnavailableError`. */
  readonly callTimeoutMs: number;

  constructor(
    readonly client: TableClient,
    private readonly clock: Clock = systemClock,
    options: { readonly callTimeoutMs?: number } = {},
  ) {
    this.callTimeoutMs = integerOption(options.callTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS, 'callTimeoutMs', 1, MAX_STORE_TIMEOUT_MS);
  }

  async ensureTable(): Promise<void> {
    try {
      await withDeadline(this.callTimeoutMs, 'createTable', 'write', (abortSignal) => this.client.createTable({ abortSignal }));
    } catch (error) {
      throw toDomainError(error, 'createTable', 'write');
    }
  }

  /**
   * Stores the message; returns its row key.
   * @throws StoreUnavailableError (retryable: the message must then be redelivered, not completed).
   */
  async park(message: ParkedMessage): Promise<string> {
    const bytes = bodyBytes(message.body);
    const bodyDigest = createHash('sha256').update(bytes).digest('hex');
    const messageId = messageIdText(message.info);
    const rowKey = createHash('sha256')
      .update(JSON.stringify([message.consumer, messageId ?? null, bodyDigest]))
      .digest('hex');
    const kept = bytes.subarray(0, MAX_PARKED_BODY_BYTES).toString('base64');
    const entity: TableEntity = {
      partitionKey: message.consumer,
      rowKey,
      reason: message.reason,
      detail: message.detail.slice(0, 4000),
      messageId: messageId ?? '',
      correlationId: message.info.correlationId ?? '',
      deliveryCount: message.info.deliveryCount ?? 0,
      enqueuedTimeUtc: message.info.enqueuedTimeUtc ?? '',
      contentType: message.info.contentType ?? '',
      bodyDigest,
      bodyBytes: bytes.length,
      bodyTruncated: bytes.length > MAX_PARKED_BODY_BYTES,
      bodyChunks: Math.ceil(kept.length / CHUNK_CHARS),
      parkedAtMs: { value: String(this.clock.nowMs()), type: 'Int64' },
    };
    for (let i = 0; i * CHUNK_CHARS < kept.length; i++) entity[`body${i}`] = kept.slice(i * CHUNK_CHARS, (i + 1) * CHUNK_CHARS);
    try {
      // An upsert of the same row: a retry after "may have landed" writes it again, harmlessly.
      await withDeadline(this.callTimeoutMs, 'park', 'write', (abortSignal) => this.client.upsertEntity(entity, 'Replace', { abortSignal }));
    } catch (error) {
      throw toDomainError(error, 'park', 'write');
    }
    return rowKey;
  }

  /** The parked messages of one consumer, body decoded (for operators and tests). */
  async list(consumer: string): Promise<Array<{ rowKey: string; reason: string; detail: string; messageId: string; body: Buffer; bodyTruncated: boolean }>> {
    const out = [];
    try {
      const filter = `PartitionKey eq '${consumer.replace(/'/g, "''")}'`;
      for await (const entity of this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
        const chunks = Number(entity.bodyChunks ?? 0);
        let base64 = '';
        for (let i = 0; i < chunks; i++) {
          const chunk = entity[`body${i}`];
          base64 += typeof chunk === 'string' ? chunk : '';
        }
        out.push({
          rowKey: String(entity.rowKey),
          reason: String(entity.reason),
          detail: String(entity.detail),
          messageId: String(entity.messageId),
          body: Buffer.from(base64, 'base64'),
          bodyTruncated: Boolean(entity.bodyTruncated),
        });
      }
    } catch (error) {
      throw toDomainError(error, 'listParked');
    }
    return out;
  }
}
