// Run by test/integration/leftIntervals.test.ts after a.fixture.ts, in the same worker.
import net from 'node:net';

const ticks = net as unknown as Record<symbol, number>;
const TICKS = Symbol.for('leftIntervalsFixture.ticks');

test('the interval the previous file left no longer runs', async () => {
  const before = ticks[TICKS];
  await new Promise((r) => setTimeout(r, 300));
  expect(ticks[TICKS]).toBe(before);
});
