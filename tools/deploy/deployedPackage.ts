import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import ignore from 'ignore';

/**
 * What a deployment of this app ships, rebuilt here the way the platform builds it:
 *
 *   1. the upload: the repository as azd (and `func azure functionapp publish`) zips it, minus `.funcignore`
 *      (azd also drops `.azure`, `.funcignore` and `local.settings.json` itself: azure-dev
 *      `cli/azd/pkg/project/project_utils.go` `createDeployableZip`); no `dist/`, no `node_modules`;
 *   2. the remote build (Oryx, `remoteBuild: true`): `npm run build` (here: `tsc -p tsconfig.build.json` into a
 *      fresh `dist/`, so no stale compiled file can match `main`), then `npm run build:azure`
 *      (`npm prune --omit=dev`): the production dependencies only, here `npm ci --omit=dev` from the lock file,
 *      cached by the lock file's hash under `~/.cache/idempotent-consumer/prod-install/`.
 *
 * `test/integration/deploymentContract.test.ts` loads the result the way the Node worker loads `main`;
 * `npm run package:measure` prints its size and file count.
 */

/** Names azd leaves out of every Functions zip, whatever `.funcignore` says. */
const AZD_ALWAYS_EXCLUDED = new Set(['.azure', '.funcignore', 'local.settings.json']);

/** The files (paths relative to `root`, `/`-separated, sorted) of the zip a deployment uploads. */
export function uploadFiles(root: string): string[] {
  const rules = ignore().add(readFileSync(join(root, '.funcignore'), 'utf8'));
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = relative(root, join(dir, entry.name)).split(sep).join('/');
      if (AZD_ALWAYS_EXCLUDED.has(entry.name)) continue;
      if (rules.ignores(entry.isDirectory() ? `${path}/` : path)) continue;
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.isFile()) files.push(path);
    }
  };
  walk(root);
  return files.sort();
}

/** The hash that names a production install: the lock file and package.json (npm ci checks one against the other). */
export function lockHash(root: string): string {
  const hash = createHash('sha256');
  for (const file of ['package.json', 'package-lock.json']) hash.update(readFileSync(join(root, file)));
  return hash.digest('hex').slice(0, 16);
}

/** Where production installs are cached (outside the repository). */
export function installCacheDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'idempotent-consumer', 'prod-install');
}

/**
 * `node_modules` of `npm ci --omit=dev` for this lock file, installed once per lock hash (about 30 s here)
 * and reused. Installs into a scratch folder and renames it, so an interrupted install is never reused.
 * @returns the path of the cached `node_modules`.
 */
export function productionModules(root: string, cacheDir: string = installCacheDir()): string {
  const target = join(cacheDir, lockHash(root));
  const modules = join(target, 'node_modules');
  if (existsSync(join(target, '.complete'))) return modules;
  const scratch = `${target}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(scratch, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(root, file), join(scratch, file));
  execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: scratch, stdio: ['ignore', 'ignore', 'inherit'] });
  writeFileSync(join(scratch, '.complete'), new Date().toISOString());
  try {
    renameSync(scratch, target);
  } catch (error) {
    // Another process finished the same install first: keep theirs.
    rmSync(scratch, { recursive: true, force: true });
    if (!existsSync(join(target, '.complete'))) throw error;
  }
  return modules;
}

/** The staged deployment: its folder and the upload's file list. */
export interface StagedPackage {
  readonly dir: string;
  readonly upload: readonly string[];
}

/**
 * Stages the deployed app in `dir` (emptied first): the upload's files, a fresh build of `src/` into
 * `dir/dist`, and the production `node_modules` (a link to the cached install).
 */
export function stageDeployedPackage(root: string, dir: string): StagedPackage {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const upload = uploadFiles(root);
  for (const file of upload) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(root, file), join(dir, file));
  }
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')], { cwd: root, stdio: 'inherit' });
  symlinkSync(productionModules(root), join(dir, 'node_modules'), 'dir');
  return { dir, upload };
}

/** Files, their bytes, and the disk space their blocks take (as `du` counts) under `path`, links followed. */
export function measure(path: string): { files: number; bytes: number; diskBytes: number } {
  let files = 0;
  let bytes = 0;
  let diskBytes = 0;
  const walk = (p: string) => {
    const info = lstatSync(p).isSymbolicLink() ? statSync(p) : lstatSync(p);
    if (info.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
    else if (info.isFile()) {
      files += 1;
      bytes += info.size;
      diskBytes += info.blocks * 512;
    }
  };
  walk(path);
  return { files, bytes, diskBytes };
}

/** The top-level package names installed in `modules` (scoped ones as `@scope/name`). */
export function installedPackages(modules: string): string[] {
  const names: string[] = [];
  for (const name of readdirSync(modules)) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@')) for (const inner of readdirSync(join(modules, name))) names.push(`${name}/${inner}`);
    else names.push(name);
  }
  return names.sort();
}
