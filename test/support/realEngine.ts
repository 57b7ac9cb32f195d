import { dotnetAvailable } from '../../tools/local/durable/DurableEngineHost';

/**
 * `test` for the real Durable engine (tools/durable-host): without `dotnet` it is skipped with a NOT RUN
 * notice, except under `CI=true`, where a missing `dotnet` fails it (CI must run the real engine).
 */
export function realEngineTest(name: string, fn: () => Promise<void>, timeoutMs: number): void {
  if (dotnetAvailable()) return test(name, fn, timeoutMs);
  if (process.env.CI === 'true') {
    return test(name, () => {
      throw new Error('dotnet is not installed: the real Durable engine tests cannot run (CI=true requires them)');
    });
  }
  console.warn(`NOT RUN (no dotnet): ${name}`);
  test.skip(name, fn);
}
