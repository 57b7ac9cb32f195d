import { dotnetAvailable } from '../../tools/local/durable/DurableEngineHost';

/**
 * Timeout of a real-engine test: it may first wait for the machine-wide lock of the extension's port 17071,
 * which the chaos e2e (up to 30 min on a busy machine) or a demo can hold; then a host start and a few charges.
 */
export const REAL_ENGINE_TIMEOUT_MS = 2_700_000;

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
