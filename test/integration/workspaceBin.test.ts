import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The console's bin in a fresh clone (issue 63): `npm ci` links the workspace's bins before any build, so a bin
 * pointing into `dist/` (which the build makes later) was never linked and `npx azure-functions-idempotency` was
 * "not found" after the README's commands. Here: a fresh workspace holding the package's sources as a clone has them
 * (no `dist/`), `npm install --offline` (the package needs nothing from a registry: its peers are optional), the bin
 * checked before and after "the build" (the repository's built `dist/`, which jest's global setup made, copied in).
 */
const ROOT = join(__dirname, '..', '..');
const PACKAGE = join(ROOT, 'packages', 'idempotency');

describe("the console's bin in a fresh clone of a workspace", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'idem-bin-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'fresh-clone', private: true, workspaces: ['packages/*'] }));
    cpSync(PACKAGE, join(dir, 'packages', 'idempotency'), {
      recursive: true,
      filter: (source) => !/[\\/](dist|node_modules)$/.test(source),
    });
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: 'pipe' });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('npm links it before the build; before the build it says to build, after it `npx azure-functions-idempotency --help` prints the usage', () => {
    const bin = join(dir, 'node_modules', '.bin', 'azure-functions-idempotency');
    expect(existsSync(bin)).toBe(true);
    let before: { status: number | null; stderr: string } = { status: 0, stderr: '' };
    try {
      execFileSync(bin, ['--help'], { cwd: dir, stdio: 'pipe', encoding: 'utf8' });
    } catch (error) {
      before = error as { status: number | null; stderr: string };
    }
    expect(before.status).toBe(1);
    expect(before.stderr).toMatch(/not built yet .*run `npm run build`/);

    cpSync(join(PACKAGE, 'dist'), join(dir, 'packages', 'idempotency', 'dist'), { recursive: true }); // the build
    const usage = execFileSync('npx', ['--offline', '--no-install', 'azure-functions-idempotency', '--help'], { cwd: dir, encoding: 'utf8' });
    expect(usage).toContain("azure-functions-idempotency: the operator's console");
    expect(readFileSync(join(PACKAGE, 'package.json'), 'utf8')).toContain('"bin/azure-functions-idempotency.js"');
  });
});
