import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { deadLetterKeysSource, PEEK_PAGE_SIZE, type PeekPage } from '../../src/lifecycle/deadLetterKeys';

/** A dead-letter queue of `ids`, peeked page by page as `@azure/service-bus` does (a cursor per receiver). */
function queueOf(ids: unknown[]) {
  const stats = { opened: 0, closed: 0, pages: 0 };
  return {
    stats,
    open: async () => {
      stats.opened++;
      let next = 0;
      const peek: PeekPage = async (max) => {
        stats.pages++;
        const page = ids.slice(next, next + max).map((messageId) => ({ messageId }));
        next += page.length;
        return page;
      };
      return { peek, close: async () => void stats.closed++ };
    },
  };
}

describe('deadLetterKeysSource', () => {
  test('lists the key of every dead-lettered message across pages, the consumer scope the consumer claims with', async () => {
    const ids = Array.from({ length: 2 * PEEK_PAGE_SIZE + 7 }, (_, i) => `pay-${i}`);
    const queue = queueOf(ids);
    const source = deadLetterKeysSource({ name: 'payments dead-letter queue', consumer: 'payments', open: queue.open, maxMessages: 10_000 });
    const keys = await source.heldKeys();
    expect(keys).toHaveLength(ids.length);
    expect(keys[0]).toEqual(keyFromMessageId('payments', 'pay-0'));
    expect(keys.map((k) => k.key)).toEqual(ids);
    expect(queue.stats).toEqual({ opened: 1, closed: 1, pages: 4 });
  });

  test('skips messages without a usable MessageId (they never claimed a record); a number too: the trigger refuses numeric MessageIds', async () => {
    const source = deadLetterKeysSource({ name: 'dlq', consumer: 'payments', open: queueOf(['', undefined, 42, 'pay-1']).open, maxMessages: 10 });
    expect((await source.heldKeys()).map((k) => k.key)).toEqual(['pay-1']);
  });

  test('more messages than it may hold throws (a partial list would let the sweep delete a held record), and closes the cursor', async () => {
    const queue = queueOf(Array.from({ length: 300 }, (_, i) => `pay-${i}`));
    const source = deadLetterKeysSource({ name: 'payments dead-letter queue', consumer: 'payments', open: queue.open, maxMessages: 299 });
    await expect(source.heldKeys()).rejects.toThrow('payments dead-letter queue holds more than 299 messages');
    expect(queue.stats.closed).toBe(1);
  });

  test('a peek that fails fails the read, and the cursor is closed', async () => {
    let closed = 0;
    const source = deadLetterKeysSource({
      name: 'dlq',
      consumer: 'payments',
      maxMessages: 10,
      open: async () => ({ peek: async () => Promise.reject(new Error('ServiceCommunicationError')), close: async () => void closed++ }),
    });
    await expect(source.heldKeys()).rejects.toThrow('ServiceCommunicationError');
    expect(closed).toBe(1);
  });
});

/** A dead-letter queue of `ids` peeked page by page; `sizes` records the page size each peek asked for. */
function pagedQueueOf(ids: unknown[]) {
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
    const queue = pagedQueueOf(ids);
    const source = deadLetterKeysSource({ name: 'payments dead-letter queue', consumer: 'payments', open: queue.open, maxMessages: ids.length });
    expect(source.name).toBe('payments dead-letter queue');
    const keys = await source.heldKeys();
    expect(keys).toEqual(ids.map((id) => keyFromMessageId('payments', id)));
    expect(queue.sizes).toEqual([PEEK_PAGE_SIZE, PEEK_PAGE_SIZE, PEEK_PAGE_SIZE]);
    expect(queue.closed()).toBe(1);
  });

  test('one message more is refused with what the operator must do, and the cursor is closed', async () => {
    const queue = pagedQueueOf(['pay-1', 'pay-2', 'pay-3']);
    const source = deadLetterKeysSource({ name: 'payments dead-letter queue', consumer: 'payments', open: queue.open, maxMessages: 2 });
    await expect(source.heldKeys()).rejects.toThrow(
      new Error('payments dead-letter queue holds more than 2 messages: the expiry sweep keeps every record until it is worked down'),
    );
    expect(queue.closed()).toBe(1);
  });

  test('an empty queue holds nothing: one peek, then the cursor is closed', async () => {
    const queue = pagedQueueOf([]);
    const keys = await deadLetterKeysSource({ name: 'dlq', consumer: 'payments', open: queue.open, maxMessages: 0 }).heldKeys();
    expect(keys).toEqual([]);
    expect(queue.sizes).toEqual([PEEK_PAGE_SIZE]);
    expect(queue.closed()).toBe(1);
  });
});
