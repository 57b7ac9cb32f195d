/**
 * Jest's global setup: builds the core package (`tsc -b packages/idempotency`, a no-op when it is up to date) before
 * any test runs. The tests import the core from its sources (jest.config.js maps it), but the tests that compile the
 * app with `tsc -p tsconfig.tools.json` (the real Durable engine's app, the stop-signals e2e) resolve it through
 * node_modules to `packages/idempotency/dist`, which nothing else has built on a fresh clone (issue 46).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export default function buildCorePackage(): void {
  const root = join(__dirname, '..', '..');
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-b', join(root, 'packages', 'idempotency')], {
    cwd: root,
    stdio: 'inherit',
  });
}
