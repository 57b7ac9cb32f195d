import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import ignore from 'ignore';

/**
 * What a deployment of this app ships, rebuilt here the way the platform builds it (docs/deploy.md, 3.): the upload
 * (the repository as azd zips it, minus `.funcignore` and what azd always drops), then the remote build (`npm run
 * build` into a fresh `dist/`, the production dependencies from the lock file, cached by its hash, the workspace
 * linked to the staged, built package). `test/integration/deploymentContract.test.ts` loads the result as the Node
 * worker loads `main`; `npm run package:measure` prints its size.
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

/** The workspaces of the root package.json: package name -> folder (relative to `root`, `/`-separated). */
export function workspaces(root: string): Map<string, string> {
  const patterns = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces?: string[] }).workspaces ?? [];
  const found = new Map<string, string>();
  for (const pattern of patterns) {
    if (!pattern.endsWith('/*')) throw new Error(`unsupported workspace pattern ${pattern} (only <folder>/*)`);
    const parent = pattern.slice(0, -2);
    for (const entry of readdirSync(join(root, parent), { withFileTypes: true })) {
      const manifest = join(root, parent, entry.name, 'package.json');
      if (entry.isDirectory() && existsSync(manifest))
        found.set((JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name, `${parent}/${entry.name}`);
    }
  }
  return found;
}

/** The files npm ci reads: package.json, the lock file and each workspace's package.json. */
function installManifests(root: string): string[] {
  return ['package.json', 'package-lock.json', ...[...workspaces(root).values()].map((folder) => `${folder}/package.json`)];
}

/** The hash that names a production install: the files npm ci reads (it checks the lock against the manifests). */
export function lockHash(root: string): string {
  const hash = createHash('sha256');
  for (const file of installManifests(root)) hash.update(readFileSync(join(root, file)));
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
  for (const file of installManifests(root)) {
    mkdirSync(dirname(join(scratch, file)), { recursive: true });
    copyFileSync(join(root, file), join(scratch, file));
  }
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
 * `dir/node_modules`: a link to each package of the cached production install, except the workspaces, which
 * link to their folder in `dir` (as npm links them: `../packages/<name>`), so the staged, built package loads.
 */
function linkProductionModules(root: string, dir: string): void {
  const cached = productionModules(root);
  const local = workspaces(root);
  const link = (name: string) => {
    const at = join(dir, 'node_modules', name);
    const folder = local.get(name);
    if (folder) symlinkSync(relative(dirname(at), join(dir, folder)), at, 'dir');
    else symlinkSync(join(cached, name), at, 'dir');
  };
  for (const name of installedPackages(cached)) {
    mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
    link(name);
  }
}

/**
 * Stages the deployed app in `dir` (emptied first): the upload's files, a fresh build of the workspaces (the
 * core package) and of `src/` into `dir/dist`, and the production `node_modules` (links to the cached install).
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
  for (const folder of workspaces(root).values()) {
    // `npm run build` builds each workspace first (tsc -b: up to date, or rebuilt); its emitted JS and d.ts are staged.
    execFileSync(process.execPath, [tsc, '-b', join(root, folder)], { cwd: root, stdio: 'inherit' });
    cpSync(join(root, folder, 'dist'), join(dir, folder, 'dist'), { recursive: true, filter: (src) => !src.endsWith('.tsbuildinfo') });
  }
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')], { cwd: root, stdio: 'inherit' });
  linkProductionModules(root, dir);
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
