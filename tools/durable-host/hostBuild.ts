/** The real Durable host's build (tools/durable-host, dotnet build on first use or change) and where its app lives. */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { withFileLock } from '../cli/lockFile';
import { REPO_ROOT as ROOT } from '../cli/repoRoot';

const HOST_DIR = path.join(ROOT, 'tools', 'durable-host');
const HOST_DLL = path.join(HOST_DIR, 'bin', 'Release', 'net10.0', 'DurableHost.dll');
/** Whether `dotnet` can run here (the real-engine tests are skipped with a NOT RUN notice without it). */
export function dotnetAvailable(): boolean {
  return spawnSync('dotnet', ['--version'], { stdio: 'ignore' }).status === 0;
}

function newestMtimeMs(dir: string, test: (file: string) => boolean): number {
  return readdirSync(dir)
    .filter(test)
    .reduce((m, f) => Math.max(m, statSync(path.join(dir, f)).mtimeMs), 0);
}

/**
 * Builds `tools/durable-host` (restore + build, `npm run durable-host:build`) unless its DLL is newer than its
 * sources: NuGet's package cache and the DLL make a second build free. Serialised by a lock file.
 * @returns the DLL's path
 */
export function ensureDurableHostBuilt(log: (line: string) => void = () => undefined): string {
  const sourcesMs = newestMtimeMs(HOST_DIR, (f) => f.endsWith('.cs') || f.endsWith('.csproj'));
  if (existsSync(HOST_DLL) && statSync(HOST_DLL).mtimeMs >= sourcesMs) return HOST_DLL;
  return withFileLock(path.join(tmpdir(), 'durable-host-build.lock'), () => {
    if (existsSync(HOST_DLL) && statSync(HOST_DLL).mtimeMs >= sourcesMs) return HOST_DLL;
    log('building tools/durable-host (dotnet build -c Release)');
    execFileSync('dotnet', ['build', HOST_DIR, '-c', 'Release', '-nologo', '-v', 'q'], { stdio: ['ignore', 'pipe', 'pipe'] });
    return HOST_DLL;
  });
}

/**
 * The built app the bridge loads. Run from `dist/` (the demo, the bench: `tsc -b tsconfig.tools.json`
 * built it), that `dist/`; under Jest (sources), the same compilation (`tsconfig.tools.json`) into
 * `tools/durable-host/obj/app`, so it never races another test writing `dist/`.
 * @returns the directory holding `src/functions/*.js` and `tools/durable-host/bridge.js`
 */
export function builtApp(): string {
  if (__filename.endsWith('.js')) return path.resolve(__dirname, '..', '..'); // dist/tools/durable-host -> dist
  const out = path.join(HOST_DIR, 'obj', 'app');
  return withFileLock(path.join(tmpdir(), 'durable-host-app.lock'), () => {
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    execFileSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.tools.json'), '--outDir', out, '--tsBuildInfoFile', path.join(out, 'tsbuildinfo')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return out;
  });
}
