import { InvalidKeyError, keyFromMessageId, type IdempotencyKey } from 'azure-functions-idempotency';
import type { HeldKeysSource } from 'azure-functions-idempotency/table';

/** A page of a dead-letter queue as a peek returns it (`@azure/service-bus` `peekMessages`: next messages, no lock). */
export type PeekPage = (maxMessages: number) => Promise<ReadonlyArray<{ readonly messageId?: unknown }>>;

/** Most dead-lettered messages the sweep holds in one run; more fails the run (nothing deleted) until worked down. */
export const MAX_HELD_DEAD_LETTERS = 100_000;

/** Messages one page asks for. */
export const PEEK_PAGE_SIZE = 250;

/**
 * A consumer's dead-letter queue as the sweep's {@link HeldKeysSource}: the key of every dead-lettered message, read
 * by peeking (no lock, nothing settled) page after page until a page comes back empty. A message without a usable
 * MessageId never claimed a record (it was refused before the claim) and is skipped.
 *
 * `open` gives a fresh peek cursor per read and `close` ends it. More than `maxMessages` messages throws: the list
 * would be too long to hold in one run, and a partial one would let the sweep delete a held record (the run fails,
 * nothing is deleted; an operator must work the queue down, see docs/lifecycle.md).
 * @throws Error when the queue cannot be read, or holds more than `maxMessages`.
 */
export function deadLetterKeysSource(options: {
  readonly name: string;
  /** The consumer name the keys are scoped by (`payments`): the same the consumer claims with. */
  readonly consumer: string;
  readonly open: () => Promise<{ peek: PeekPage; close: () => Promise<void> }>;
  readonly maxMessages: number;
}): HeldKeysSource {
  return {
    name: options.name,
    async heldKeys(): Promise<readonly IdempotencyKey[]> {
      const cursor = await options.open();
      try {
        const keys: IdempotencyKey[] = [];
        let seen = 0;
        for (;;) {
          const page = await cursor.peek(PEEK_PAGE_SIZE);
          if (page.length === 0) return keys;
          seen += page.length;
          if (seen > options.maxMessages)
            throw new Error(`${options.name} holds more than ${options.maxMessages} messages: the expiry sweep keeps every record until it is worked down`);
          for (const message of page) {
            const key = keyOf(options.consumer, message.messageId);
            if (key) keys.push(key);
          }
        }
      } finally {
        await cursor.close();
      }
    },
  };
}

function keyOf(consumer: string, messageId: unknown): IdempotencyKey | undefined {
  try {
    return keyFromMessageId(consumer, messageId);
  } catch (error) {
    if (error instanceof InvalidKeyError) return undefined;
    throw error;
  }
}
