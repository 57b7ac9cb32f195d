/**
 * What a consumer knows of one delivered message, taken from the Service Bus trigger metadata
 * (keys arrive camel-cased: `messageId`, `deliveryCount`, `correlationId`, `enqueuedTimeUtc`...).
 * Plain data: nothing here depends on the Functions runtime.
 */
export interface MessageInfo {
  /** As delivered; validated into a key later (it may be missing or malformed). */
  readonly messageId: unknown;
  readonly deliveryCount?: number;
  readonly correlationId?: string;
  readonly enqueuedTimeUtc?: string;
  readonly contentType?: string;
}

/** Reads the fields a consumer uses from trigger metadata; tolerant of absent or odd values. */
export function messageInfoFrom(triggerMetadata: Readonly<Record<string, unknown>> | undefined): MessageInfo {
  const meta = triggerMetadata ?? {};
  const deliveryCount = Number(meta.deliveryCount);
  return {
    messageId: meta.messageId,
    deliveryCount: Number.isFinite(deliveryCount) ? deliveryCount : undefined,
    correlationId: typeof meta.correlationId === 'string' && meta.correlationId !== '' ? meta.correlationId : undefined,
    enqueuedTimeUtc: timeText(meta.enqueuedTimeUtc),
    contentType: typeof meta.contentType === 'string' ? meta.contentType : undefined,
  };
}

/** The message id as text for logs and parking (never the payload). */
export function messageIdText(info: MessageInfo): string | undefined {
  const id = info.messageId;
  if (typeof id === 'string' && id !== '') return id;
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  return undefined;
}

/** An enqueue time as text: the host passes a string (or, from other callers, a Date); anything else is dropped. */
function timeText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString();
  return undefined;
}
