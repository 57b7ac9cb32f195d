// StrykerJS's build command for the simulator runner (stryker.sim.config.mjs), run inside the sandbox
// (.stryker-tmp/sandbox-*): the compiled simulator must load the sandbox's instrumented core package, not the
// repository's. The tools import the core by its package name, and the workspace link in the repository's
// node_modules (azure-functions-idempotency -> ../packages/idempotency) points at the repository's copy. So the
// sandbox gets a node_modules of its own holding only that link (every other package is found one level up, in the
// repository's node_modules, by Node's lookup); then `tsc -b tsconfig.tools.json` builds the instrumented core and the
// app and tools into the sandbox's dist/ (the instrumented sources carry `// @ts-nocheck`).
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const sandbox = process.cwd();
if (!/[\\/]\.stryker-tmp[^\\/]*[\\/]/.test(sandbox)) {
  console.error(`simSandbox.mjs runs in a Stryker sandbox only (cwd ${sandbox})`);
  process.exit(2);
}
const modules = join(sandbox, 'node_modules');
if (existsSync(modules) && lstatSync(modules).isSymbolicLink()) {
  console.error('the sandbox node_modules is a link to the repository: set symlinkNodeModules: false');
  process.exit(2);
}
mkdirSync(modules, { recursive: true });
const link = join(modules, 'azure-functions-idempotency');
if (!existsSync(link)) symlinkSync(join('..', 'packages', 'idempotency'), link, 'dir');

const tsc = createRequire(resolve(sandbox, '..', '..', 'package.json')).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-b', 'tsconfig.tools.json'], { cwd: sandbox, stdio: 'inherit' });

// What the simulator will load: the sandbox's core, not the repository's.
const loaded = createRequire(join(sandbox, 'dist', 'tools', 'simulate', 'main.js')).resolve('azure-functions-idempotency');
if (!loaded.startsWith(sandbox)) {
  console.error(`the simulator would load the core from ${loaded}, outside the sandbox`);
  process.exit(2);
}
console.log(`simulator sandbox built; core from ${loaded}`);
