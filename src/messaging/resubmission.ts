import type { ParkedRow } from './ParkingStore';

/** What to send again for a parked event: the bytes delivered and the application properties it came with. */
export interface Resubmission {
  readonly body: Buffer;
  /** As delivered, e.g. a binary-mode CloudEvent's `cloudEvents:*` attributes: its identity travels with them. */
  readonly properties: Readonly<Record<string, unknown>>;
}

/**
 * The event a parked row holds, to send again unchanged (after the cause is fixed): the body's bytes as delivered and
 * the application properties kept with it. A binary-mode CloudEvent keeps its identity (`cloudEvents:source` + `id`),
 * so the consumer applies it at most once: a second resubmission is a duplicate.
 * @throws Error when the body was kept truncated (only a body over 100 MiB, which no trigger delivers): it cannot be sent as it was.
 */
export function resubmissionOf(row: ParkedRow): Resubmission {
  if (row.bodyTruncated) throw new Error(`parked ${row.rowKey}: its body was kept truncated (${row.bodyBytes} bytes delivered); it cannot be sent as it was`);
  return { body: row.body, properties: row.properties };
}
