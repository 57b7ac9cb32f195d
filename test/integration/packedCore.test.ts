import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { useAzurite } from '../support/azurite';

/**
 * The core as a team installs it (issue 36): `npm pack` of packages/idempotency, installed into a fresh Functions
 * app beside `@azure/functions` and `@azure/data-tables` (and `@types/node`, which any TypeScript app has), then
 * the quickstart (examples/quickstart.ts) compiled there with strict TypeScript and run against Azurite.
 *
 * Offline: the fresh app's lock file is the subset of this repository's lock for those three packages, installed
 * with `npm ci --offline` from npm's cache (warm after the repository's own `npm ci`); the tarball is installed
 * with `npm install --offline`. No registry is asked: a missing cache entry fails the install (ENOTCACHED).
 */
const ROOT = join(__dirname, '..', '..');
const PACKAGE = join(ROOT, 'packages', 'idempotency');
const BASE = ['@azure/functions', '@azure/data-tables', '@types/node'];
/** A file in dist/ that no source builds (as a module's output left behind after the module was removed). */
const STALE_OUTPUT = 'stale-removed-module.js';

/** The issue's goal, beyond the base: at most 5 packages and 3 MB. */
const MAX_ADDED_PACKAGES = 5;
const MAX_ADDED_BYTES = 3 * 1024 * 1024;

interface LockEntry {
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  [field: string]: unknown;
}

/** The entries of the repository's lock file that install `names` (and everything they need), as npm laid them out. */
function lockSubset(names: readonly string[]): Record<string, LockEntry> {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const at = (from: string, name: string): string => {
    for (let dir = from; ; dir = dir.includes('/node_modules/') ? dir.slice(0, dir.lastIndexOf('/node_modules/')) : '') {
      const path = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (lock.packages[path]) return path;
      if (!dir) throw new Error(`${name} (needed by ${from || 'the app'}) is not in package-lock.json`);
    }
  };
  const picked: Record<string, LockEntry> = {};
  const queue = names.map((name) => at('', name));
  while (queue.length > 0) {
    const path = queue.pop()!;
    if (picked[path]) continue;
    const { dev: _dev, peer: _peer, devOptional: _devOptional, ...entry } = lock.packages[path];
    picked[path] = entry;
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) queue.push(at(path, name));
  }
  return picked;
}

/** Packages (folders with a package.json right under a node_modules, or under its @scope) and the bytes of all files in `modules`. */
function census(modules: string): { packages: number; bytes: number } {
  let packages = 0;
  let bytes = 0;
  const walk = (dir: string, isPackageRoot: boolean) => {
    if (isPackageRoot && existsSync(join(dir, 'package.json'))) packages += 1;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const inModules = basename(dir) === 'node_modules' || (basename(dir).startsWith('@') && basename(dirname(dir)) === 'node_modules');
      if (entry.isDirectory()) walk(path, inModules && !entry.name.startsWith('@') && !entry.name.startsWith('.'));
      else if (entry.isFile()) bytes += lstatSync(path).size;
    }
  };
  walk(modules, false);
  return { packages, bytes };
}

const npm = (args: readonly string[], cwd: string) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });

const azuriteOf = useAzurite();
let app: string;
let before: { packages: number; bytes: number };
let after: { packages: number; bytes: number };
let basePackages: number;

beforeAll(() => {
  app = mkdtempSync(join(tmpdir(), 'packed-core-'));
  // The tarball, as `npm publish` would ship it (the package built first).
  // Output of a module since removed must not ship: the package's `prepack` (npm pack and publish run it) builds
  // from a clean dist/. Run here by name, as the installs below ignore scripts.
  mkdirSync(join(PACKAGE, 'dist'), { recursive: true });
  writeFileSync(join(PACKAGE, 'dist', STALE_OUTPUT), 'module.exports = {};\n');
  execFileSync('npm', ['run', 'prepack', '--loglevel=error'], { cwd: PACKAGE, stdio: 'inherit' });
  const tarball = join(app, npm(['pack', '--pack-destination', app], PACKAGE).trim().split('\n').pop()!);
  // A fresh app with the base packages at the repository's versions.
  const lockPackages = lockSubset(BASE);
  const dependencies = Object.fromEntries(BASE.map((name) => [name, lockPackages[`node_modules/${name}`].version]));
  const manifest = { name: 'fresh-functions-app', version: '1.0.0', private: true, dependencies };
  mkdirSync(join(app, 'site'));
  app = join(app, 'site');
  writeFileSync(join(app, 'package.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(
    join(app, 'package-lock.json'),
    JSON.stringify({ ...manifest, lockfileVersion: 3, requires: true, packages: { '': { ...manifest, private: undefined }, ...lockPackages } }, null, 2),
  );
  npm(['ci', '--offline'], app);
  basePackages = Object.keys(lockPackages).length;
  before = census(join(app, 'node_modules'));
  npm(['install', '--offline', tarball], app);
  after = census(join(app, 'node_modules'));
  console.log(
    `packed core: ${relative(join(app, '..'), tarball)}; base ${before.packages} packages, ${before.bytes} B; ` +
      `after ${after.packages} packages, ${after.bytes} B; added ${after.packages - before.packages} packages, ${after.bytes - before.bytes} B`,
  );
}, 300_000);

afterAll(() => {
  if (app) rmSync(join(app, '..'), { recursive: true, force: true });
});

describe('the packed core in a fresh Functions app', () => {
  test(`installing it adds at most ${MAX_ADDED_PACKAGES} packages and 3 MB beyond @azure/functions + @azure/data-tables`, () => {
    expect(before.packages).toBe(basePackages); // the census counts what npm installed: the base and its dependencies
    expect(after.packages - before.packages).toBeGreaterThanOrEqual(1);
    expect(after.packages - before.packages).toBeLessThanOrEqual(MAX_ADDED_PACKAGES);
    expect(after.bytes - before.bytes).toBeLessThanOrEqual(MAX_ADDED_BYTES);
    const shipped = readdirSync(join(app, 'node_modules', 'azure-functions-idempotency')).sort();
    expect(shipped).toEqual(['CHANGELOG.md', 'LICENSE', 'README.md', 'bin', 'dist', 'package.json']); // bin: the console's entry (issue 63)
    // Built from a clean dist/: what no source builds does not ship (the package's own build is still there).
    expect(existsSync(join(app, 'node_modules', 'azure-functions-idempotency', 'dist', STALE_OUTPUT))).toBe(false);
    expect(existsSync(join(PACKAGE, 'dist', STALE_OUTPUT))).toBe(false);
    expect(existsSync(join(PACKAGE, 'dist', 'index.js'))).toBe(true);
  });

  test('the quickstart compiles there with strict TypeScript and runs against Azurite; a Table user loads no Cosmos code', () => {
    copyFileSync(join(ROOT, 'examples', 'quickstart.ts'), join(app, 'quickstart.ts'));
    const compilerOptions = {
      strict: true,
      target: 'ES2022',
      module: 'node16',
      moduleResolution: 'node16',
      types: ['node'],
      outDir: 'out',
      skipLibCheck: false,
    };
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['quickstart.ts'] }));
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], { cwd: app, stdio: 'inherit' });
    writeFileSync(
      join(app, 'run.js'),
      `const { InvocationContext } = require('@azure/functions');
const { createStore, paymentsHandler } = require('./out/quickstart.js');
(async () => {
  const store = await createStore(process.argv[2], { allowInsecureConnection: true });
  const calls = [];
  const handler = paymentsHandler(store, async (payment, key) => (calls.push(key), { chargeId: 'ch-' + payment.paymentId }));
  const delivery = (n) => new InvocationContext({ invocationId: 'q' + n, functionName: 'payments', triggerMetadata: { messageId: 'pay-p1', deliveryCount: n }, logHandler: () => {} });
  const results = [await handler({ paymentId: 'pay-p1', amount: 10 }, delivery(1)), await handler({ paymentId: 'pay-p1', amount: 10 }, delivery(2))];
  const loaded = Object.keys(require.cache).filter((p) => /azure-functions-idempotency|@azure[\\\\/]cosmos/.test(p)).map((p) => p.slice(__dirname.length + 1));
  console.log(JSON.stringify({ results, calls, loaded, core: require.resolve('azure-functions-idempotency').slice(__dirname.length + 1) }));
})().catch((error) => { console.error(error); process.exit(1); });
`,
    );
    const out = execFileSync(process.execPath, ['run.js', azuriteOf().connectionString], { cwd: app, encoding: 'utf8', env: { PATH: process.env.PATH } });
    const run = JSON.parse(out.trim().split('\n').pop()!) as { results: unknown[]; calls: string[]; loaded: string[]; core: string };
    expect(run.results).toEqual([{ chargeId: 'ch-pay-p1' }, { chargeId: 'ch-pay-p1' }]);
    expect(run.calls).toEqual(['pay-p1']); // charged once; the redelivery got the stored result
    expect(run.core).toBe(join('node_modules', 'azure-functions-idempotency', 'dist', 'index.js')); // the installed tarball, not the repository
    expect(run.loaded.some((p) => p.includes(join('dist', 'stores', 'table')))).toBe(true);
    expect(run.loaded.filter((p) => /cosmos/i.test(p))).toEqual([]);
  });

  test("the operator's console runs from the install (`npx azure-functions-idempotency`, the bin), needing no optional peer it does not use", () => {
    const bin = join(app, 'node_modules', '.bin', 'azure-functions-idempotency');
    const cli = (args: readonly string[]) => {
      try {
        return { code: 0, out: execFileSync(bin, args, { cwd: app, encoding: 'utf8', env: { PATH: process.env.PATH, USER: 'ops' }, stdio: 'pipe' }) };
      } catch (error) {
        const e = error as { status: number; stdout: string; stderr: string };
        return { code: e.status, out: `${e.stdout}${e.stderr}` };
      }
    };
    // The quickstart's run (the test above) left the record of payments/pay-p1 in the table `idempotency`.
    const list = cli(['keys', 'list', 'payments', '--table-connection-string', azuriteOf().connectionString, '--json']);
    expect([list.code, JSON.parse(list.out).records.map((r: { key: string; state: string }) => [r.key, r.state])]).toEqual([0, [['pay-p1', 'completed']]]);
    // Only @azure/data-tables is installed: an identity, Cosmos or Service Bus is a clear usage error, not a crash.
    const identity = cli(['keys', 'show', 'payments', 'pay-p1', '--table-endpoint', 'https://account.table.core.windows.net']);
    expect([identity.code, identity.out]).toEqual([2, expect.stringContaining('needs the package @azure/identity, which is not installed')]);
    const cosmos = cli([
      'keys',
      'show',
      'payments',
      'p',
      '--store',
      'cosmos',
      '--cosmos-endpoint',
      'http://127.0.0.1:9',
      '--cosmos-database',
      'd',
      '--cosmos-container',
      'c',
    ]);
    expect([cosmos.code, cosmos.out]).toEqual([2, expect.stringContaining('needs the package @azure/cosmos')]);
    const bus = cli([
      'dlq',
      'replay',
      'payments',
      '--consumer',
      'payments',
      '--table-connection-string',
      azuriteOf().connectionString,
      '--servicebus-connection-string',
      'Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=v',
    ]);
    expect([bus.code, bus.out]).toEqual([2, expect.stringContaining('needs the package @azure/service-bus')]);
  });
});
