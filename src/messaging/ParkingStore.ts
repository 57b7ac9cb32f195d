import { createHash } from 'node:crypto';
import type { TableClient, TableEntity } from '@azure/data-tables';
import { systemClock, type Clock, DEFAULT_STORE_TIMEOUT_MS, withDeadline } from 'azure-functions-idempotency';
import { toDomainError } from 'azure-functions-idempotency/table';
// Internal: callTimeoutMs is checked with the core's option check and bound, so it fails as the stores' does (not the package's API).
import { integerOption, MAX_STORE_TIMEOUT_MS } from 'azure-functions-idempotency/internal';
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
  /** A stream event whose batch failed the same way again and again (not a store outage): set aside, never applied. */
  RepeatedFailure: 'repeated-failure',
} as const;
export type ParkReason = (typeof ParkReason)[keyof typeof ParkReason];

/** Bytes of one binary (`Edm.Binary`) body property: under the 64 KiB a Table property holds. */
export const PARKED_PART_BYTES = 60 * 1024;
/**
 * Body properties on the head row (`body0`...): 600 KiB, leaving room under its 1 MiB for the metadata. Rows are
 * sized so that their JSON (binary is base64 on the wire) is under 1 MiB too: Azurite measures that, not the formula.
 */
export const HEAD_PARTS = 10;
/** Body properties on each further row (`p0`...): 11 x 60 KiB = 660 KiB (880 KiB as base64), under an entity's 1 MiB. */
export const ROW_PARTS = 11;
/** Further rows per transaction: 4 x 880 KiB of base64 on the wire = 3.4 MiB, under a batch's 4 MiB. */
const ROWS_PER_TRANSACTION = 4;
/**
 * At most this many body bytes are kept: Service Bus Premium's largest message (100 MB; Event Hubs' is 1 MB). A
 * longer body cannot come from a trigger; it would be kept truncated and say so (`bodyTruncated`).
 */
export const MAX_PARKED_BODY_BYTES = 100 * 1024 * 1024;

/** A message set aside for an operator, with everything needed to inspect and resubmit it. */
export interface ParkedMessage {
  readonly consumer: string;
  readonly reason: ParkReason;
  /** A specific explanation (which field failed, which digests differ); never the payload itself. */
  readonly detail: string;
  readonly info: MessageInfo;
  /** The delivered body, kept so nothing is lost. */
  readonly body: unknown;
  /**
   * The application properties it was delivered with (e.g. a binary-mode CloudEvent's `cloudEvents:*` attributes,
   * its identity), kept so it can be resubmitted as it was. Only when they are surely its own.
   */
  readonly properties?: Readonly<Record<string, unknown>>;
}

/** Characters of the properties' JSON kept on the head row (a string property holds 32K characters). */
const MAX_PROPERTIES_CHARS = 30_000;

/** The properties as JSON within a string property: all of them, else the `cloudEvents:*` ones (the identity), else none. */
function propertiesText(properties: Readonly<Record<string, unknown>> | undefined): string {
  if (properties === undefined) return '';
  const all = JSON.stringify(properties);
  if (all.length <= MAX_PROPERTIES_CHARS) return all;
  const identity = JSON.stringify(Object.fromEntries(Object.entries(properties).filter(([name]) => /^cloudEvents[:_]/.test(name))));
  return identity.length <= MAX_PROPERTIES_CHARS ? identity : '';
}

/**
 * Parks messages that no retry can fix (malformed, reused keys) in a Table, so the consumer can
 * complete them and keep going while nothing is lost: the body is kept whole (up to
 * {@link MAX_PARKED_BODY_BYTES}) with the reason, message id, correlation id and delivery count. Parking is
 * idempotent: a redelivered message parked before overwrites its own rows (RowKey = hash of consumer, message id
 * and body).
 *
 * Within the Table service's limits whatever the body (docs/streams.md, "Parking"): the body is binary
 * (`Edm.Binary`, counted at its length, where a string counts 2 bytes a character) in parts of 60 KiB (a property
 * holds 64 KiB); the head row holds the first 10 parts (600 KiB) and the metadata, each further row 11 parts
 * (660 KiB; an entity holds 1 MiB), written 4 rows a transaction (a batch holds 4 MiB), the head row last.
 *
 * Rows: PartitionKey = consumer; RowKey = SHA-256 hex (head), `<head>-0000`... (further rows, `kind`
 * `parked-body`). Operators list a consumer's partition.
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

  private async write(operation: string, call: (abortSignal: AbortSignal) => Promise<unknown>): Promise<void> {
    try {
      await withDeadline(this.callTimeoutMs, operation, 'write', call);
    } catch (error) {
      throw toDomainError(error, operation, 'write');
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
    const kept = bytes.subarray(0, MAX_PARKED_BODY_BYTES);
    const parts = splitParts(kept);
    const headParts = parts.slice(0, HEAD_PARTS);
    const rows = chunksOf(parts.slice(HEAD_PARTS), ROW_PARTS).map((rowParts, i): TableEntity => ({
      partitionKey: message.consumer,
      rowKey: bodyRowKey(rowKey, i),
      kind: 'parked-body',
      parkedRowKey: rowKey,
      ...Object.fromEntries(rowParts.map((part, j) => [`p${j}`, part])),
    }));
    const entity: TableEntity = {
      partitionKey: message.consumer,
      rowKey,
      kind: 'parked',
      reason: message.reason,
      detail: message.detail.slice(0, 4000),
      messageId: (messageId ?? '').slice(0, 4000),
      correlationId: (message.info.correlationId ?? '').slice(0, 4000),
      deliveryCount: message.info.deliveryCount ?? 0,
      enqueuedTimeUtc: message.info.enqueuedTimeUtc ?? '',
      contentType: (message.info.contentType ?? '').slice(0, 1000),
      properties: propertiesText(message.properties),
      bodyDigest,
      bodyBytes: bytes.length,
      bodyTruncated: bytes.length > MAX_PARKED_BODY_BYTES,
      bodyParts: headParts.length,
      bodyRows: rows.length,
      parkedAtMs: { value: String(this.clock.nowMs()), type: 'Int64' },
      ...Object.fromEntries(headParts.map((part, j) => [`body${j}`, part])),
    };
    // The further rows first, the head row last: a head row names only rows that are all written. Every write is
    // an upsert of a row named by the body's digest: a retry after "may have landed" writes the same rows again.
    for (const group of chunksOf(rows, ROWS_PER_TRANSACTION)) {
      await this.write('parkBody', (abortSignal) =>
        this.client.submitTransaction(
          group.map((row) => ['upsert', row, 'Replace']),
          { abortSignal },
        ),
      );
    }
    await this.write('park', (abortSignal) => this.client.upsertEntity(entity, 'Replace', { abortSignal }));
    return rowKey;
  }

  /** The parked messages of one consumer, body put back together (for operators and tests). */
  async list(consumer: string): Promise<ParkedRow[]> {
    const heads: Array<Record<string, unknown>> = [];
    const further = new Map<string, Buffer[]>();
    try {
      const filter = `PartitionKey eq '${consumer.replace(/'/g, "''")}'`;
      for await (const entity of this.client.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
        if (entity.kind !== 'parked-body') heads.push(entity);
        else further.set(String(entity.rowKey), partsOf(entity, 'p', ROW_PARTS));
      }
    } catch (error) {
      throw toDomainError(error, 'listParked');
    }
    return heads.map((entity) => {
      const rowKey = String(entity.rowKey);
      const rows = Array.from({ length: Number(entity.bodyRows ?? 0) }, (_, i) => further.get(bodyRowKey(rowKey, i)) ?? []);
      const legacy = Number(entity.bodyChunks ?? 0); // rows parked before the body was binary: base64 text chunks
      const body =
        legacy > 0
          ? Buffer.from(
              Array.from({ length: legacy }, (_, i) => (typeof entity[`body${i}`] === 'string' ? entity[`body${i}`] : '') as string).join(''),
              'base64',
            )
          : Buffer.concat([...partsOf(entity, 'body', HEAD_PARTS), ...rows.flat()]);
      return {
        rowKey,
        reason: String(entity.reason),
        detail: String(entity.detail),
        messageId: String(entity.messageId),
        properties: propertiesOf(entity.properties),
        body,
        bodyBytes: Number(entity.bodyBytes ?? body.length),
        bodyTruncated: Boolean(entity.bodyTruncated),
      };
    });
  }
}

/** A parked message as `list` reads it back. */
export interface ParkedRow {
  readonly rowKey: string;
  readonly reason: string;
  readonly detail: string;
  readonly messageId: string;
  /** The application properties it was delivered with (`{}` when none were kept). */
  readonly properties: Readonly<Record<string, unknown>>;
  /** The body kept (all of it unless `bodyTruncated`). */
  readonly body: Buffer;
  /** The delivered body's length. */
  readonly bodyBytes: number;
  readonly bodyTruncated: boolean;
}

/** RowKey of the `i`-th further row of a parked message (after its head row in the partition's order). */
function bodyRowKey(rowKey: string, i: number): string {
  return `${rowKey}-${String(i).padStart(4, '0')}`;
}

function splitParts(bytes: Buffer): Uint8Array[] {
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += PARKED_PART_BYTES) parts.push(new Uint8Array(bytes.subarray(at, at + PARKED_PART_BYTES)));
  return parts;
}

function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The binary properties `<prefix>0`, `<prefix>1`... of a row, in order, until the first absent one. */
function partsOf(entity: Record<string, unknown>, prefix: string, max: number): Buffer[] {
  const parts: Buffer[] = [];
  for (let i = 0; i < max; i++) {
    const part = entity[`${prefix}${i}`];
    if (!(part instanceof Uint8Array)) break;
    parts.push(Buffer.from(part));
  }
  return parts;
}

function propertiesOf(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string' || text === '') return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
