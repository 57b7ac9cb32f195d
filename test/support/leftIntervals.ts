// Every test file loads this (jest.config.js `setupFilesAfterEnv`): an interval a test file started and left running is
// stopped when the next file starts in the same worker. Found by the network guard: a CosmosClient built with
// `aadCredentials` and an https endpoint (what the app builds from deployed settings: src/app/cosmosClient.ts,
// src/app/orders.ts) refreshes its endpoint list every 5 minutes (`endpointRefreshRateInMs`, a `setInterval` started
// in its constructor), and each refresh asks the managed identity for a token: a request to 169.254.169.254 five
// minutes later, in whatever file the worker runs then. Tests that build such clients without a `dispose()` leave one
// such interval each. The previous file's own hooks have all run by then, so nothing it still needs is stopped.
import net from 'node:net';

type Handle = ReturnType<typeof setInterval>;
interface Left {
  file: string;
  handles: Set<Handle>;
}

/** Shared by every test file of a worker (`net` is Node's own module, not one of jest's per-file sandboxes). */
const SHARED = Symbol.for('leftIntervals.previousFile');
const shared = net as unknown as Record<symbol, Left | undefined>;
const realClearInterval = clearInterval;

/** Still scheduled: Node marks a cleared timer `_destroyed` (whether `clearInterval` or `clearTimeout` cleared it). */
const running = (handle: Handle) => !(handle as unknown as { _destroyed?: boolean })._destroyed;

const previous = shared[SHARED];
const left = previous ? [...previous.handles].filter(running) : [];
if (previous && left.length > 0) {
  for (const handle of left) realClearInterval(handle);
  process.stderr.write(`leftIntervals: stopped ${left.length} interval(s) ${previous.file} left running\n`);
}

const mine: Left = { file: 'a test file', handles: new Set() };
shared[SHARED] = mine;
beforeAll(() => {
  mine.file = expect.getState().testPath ?? mine.file;
});

const realSetInterval = setInterval;
globalThis.setInterval = (...args: Parameters<typeof setInterval>) => {
  const handle = realSetInterval(...args);
  mine.handles.add(handle);
  return handle;
};
globalThis.clearInterval = (handle?: Handle | string | number) => {
  if (handle !== undefined && typeof handle === 'object') mine.handles.delete(handle);
  realClearInterval(handle);
};
