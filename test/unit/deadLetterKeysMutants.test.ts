import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { deadLetterKeysSource, PEEK_PAGE_SIZE, type PeekPage } from '../../src/lifecycle/deadLetterKeys';

/** A dead-letter queue of `ids` peeked page by page; `sizes` records the page size each peek asked for. */
function queueOf(ids: unknown[]) {
  const sizes: number[] = [];
  let closed = 0;
  return {
    sizes,
    closed: () => closed,
    open: async () => {
      let next = 0;
      const peek: PeekPage = async (max) => {
        sizes.push(max);
        const page = ids.slice(next, next + max).map((messageId) => ({ messageId }));
        next += page.length;
        return page;
      };
      return { peek, close: async () => void closed++ };
    },
  };
}

describe('deadLetterKeysSource: the bound on what one run holds', () => {
  test('exactly maxMessages messages are held (the bound is inclusive), over pages of PEEK_PAGE_SIZE', async () => {
    const ids = Array.from({ length: PEEK_PAGE_SIZE + 1 }, (_, i) => `pay-${i}`);
    const queue = queueOf(ids);
    const source = deadLetterKeysSource({ name: 'payments dead-letter queue', consumer: 'payments', open: queue.open, maxMessages: ids.length });
    expect(source.name).toBe('payments dead-letter queue');
    const keys = await source.heldKeys();
    expect(keys).toEqual(ids.map((id) => keyFromMessageId('payments', id)));
    expect(queue.sizes).toEqual([PEEK_PAGE_SIZE, PEEK_PAGE_SIZE, PEEK_PAGE_SIZE]);
    expect(queue.closed()).toBe(1);
  });

  test('one message more is refused with what the operator must do, and the cursor is closed', async () => {
    const queue = queueOf(['pay-1', 'pay-2', 'pay-3']);
    const source = deadLetterKeysSource({ name: 'payments dead-letter queue', consumer: 'payments', open: queue.open, maxMessages: 2 });
    await expect(source.heldKeys()).rejects.toThrow(
      new Error('payments dead-letter queue holds more than 2 messages: the expiry sweep keeps every record until it is worked down'),
    );
    expect(queue.closed()).toBe(1);
  });

  test('an empty queue holds nothing: one peek, then the cursor is closed', async () => {
    const queue = queueOf([]);
    const keys = await deadLetterKeysSource({ name: 'dlq', consumer: 'payments', open: queue.open, maxMessages: 0 }).heldKeys();
    expect(keys).toEqual([]);
    expect(queue.sizes).toEqual([PEEK_PAGE_SIZE]);
    expect(queue.closed()).toBe(1);
  });
});
