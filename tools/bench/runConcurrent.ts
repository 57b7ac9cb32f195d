import { performance } from 'node:perf_hooks';

/**
 * Runs `task(0..count-1)` with at most `concurrency` in flight (workers pulling the next index).
 * @returns the wall-clock seconds the whole run took. @throws the first task error.
 */
export async function runConcurrent(count: number, concurrency: number, task: (index: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return (performance.now() - started) / 1000;
}
