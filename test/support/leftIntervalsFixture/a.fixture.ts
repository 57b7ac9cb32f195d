// Run by test/integration/leftIntervals.test.ts: a file that leaves an interval running (as a CosmosClient does).
import net from 'node:net';

const ticks = net as unknown as Record<symbol, number>;
const TICKS = Symbol.for('leftIntervalsFixture.ticks');

test('starts an interval and never clears it', () => {
  ticks[TICKS] = 0;
  setInterval(() => (ticks[TICKS] += 1), 10).unref(); // unref'd, as the CosmosClient's
  clearInterval(setInterval(() => undefined, 10));
  clearTimeout(setInterval(() => undefined, 10)); // Node clears an interval with either
});
