import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** The Bicep CLI version the project pins (NuGet `Azure.Bicep.CommandLine.<rid>`). */
export const BICEP_VERSION = '0.49.2';

/** How a Bicep CLI is run: `bicep <verb> ...` or `az bicep <verb> ...`. */
export interface BicepCli {
  readonly command: string;
  readonly prefix: readonly string[];
  /** Where it was found, for the report. */
  readonly source: string;
}

/** One diagnostic line of `bicep build` / `bicep lint`: `file(line,col) : Warning rule: text`. */
export interface BicepDiagnostic {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly level: 'Error' | 'Warning' | 'Info';
  readonly code: string;
  readonly message: string;
}

export interface BicepRun {
  readonly status: number;
  readonly stdout: string;
  readonly diagnostics: readonly BicepDiagnostic[];
  /** stderr lines that are not diagnostics (crashes, restore failures). */
  readonly otherOutput: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The NuGet runtime id of this machine's Bicep package, or undefined where none is published. */
export function bicepRuntimeId(platform: NodeJS.Platform = process.platform, arch: string = process.arch): string | undefined {
  const os = platform === 'linux' ? 'linux' : platform === 'darwin' ? 'osx' : platform === 'win32' ? 'win' : undefined;
  const cpu = arch === 'x64' ? 'x64' : arch === 'arm64' ? 'arm64' : undefined;
  return os && cpu ? `${os}-${cpu}` : undefined;
}

/** The cache folder (outside the repository) that holds restored CLIs. */
export function bicepCacheDir(env: Env = process.env): string {
  return join(env.BICEP_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'idempotent-consumer', 'bicep'));
}

/** `name` on PATH, or undefined. */
export function onPath(name: string, env: Env = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, process.platform === 'win32' ? `${name}.exe` : name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Finds a Bicep CLI, in this order: `BICEP_CLI` (a path), `bicep` on PATH, `az bicep` when `az` is
 * on PATH, the pinned NuGet package already in the cache, the pinned package restored now with
 * `dotnet restore` (when `dotnet` is on PATH). Undefined when none of these is possible.
 * @param log progress lines (the restore takes seconds).
 */
export function findBicep(env: Env = process.env, log: (line: string) => void = () => undefined): BicepCli | undefined {
  if (env.BICEP_CLI) return { command: env.BICEP_CLI, prefix: [], source: `BICEP_CLI=${env.BICEP_CLI}` };
  const bicep = onPath('bicep', env);
  if (bicep) return { command: bicep, prefix: [], source: `bicep on PATH (${bicep})` };
  const az = onPath('az', env);
  if (az) return { command: az, prefix: ['bicep'], source: `az bicep (${az})` };
  const rid = bicepRuntimeId();
  if (!rid) return undefined;
  const packageId = `Azure.Bicep.CommandLine.${rid}`;
  const cache = bicepCacheDir(env);
  const binary = join(cache, packageId.toLowerCase(), BICEP_VERSION, 'tools', process.platform === 'win32' ? 'bicep.exe' : 'bicep');
  if (!existsSync(binary)) {
    const dotnet = onPath('dotnet', env);
    if (!dotnet) return undefined;
    log(`restoring ${packageId} ${BICEP_VERSION} from NuGet into ${cache}`);
    restorePackage(dotnet, packageId, cache, env);
    if (!existsSync(binary)) throw new Error(`dotnet restore of ${packageId} ${BICEP_VERSION} finished but ${binary} is missing`);
  }
  if (process.platform !== 'win32') chmodSync(binary, 0o755);
  return { command: binary, prefix: [], source: `NuGet ${packageId} ${BICEP_VERSION} (${binary})` };
}

/** Restores one NuGet package (a download, not a reference) into `cache` with a throwaway project. */
function restorePackage(dotnet: string, packageId: string, cache: string, env: Env): void {
  mkdirSync(cache, { recursive: true });
  const project = mkdtempSync(join(tmpdir(), 'bicep-restore-'));
  try {
    writeFileSync(
      join(project, 'restore.csproj'),
      [
        '<Project Sdk="Microsoft.NET.Sdk">',
        `  <PropertyGroup><TargetFramework>${targetFramework(dotnet)}</TargetFramework></PropertyGroup>`,
        `  <ItemGroup><PackageDownload Include="${packageId}" Version="[${BICEP_VERSION}]" /></ItemGroup>`,
        '</Project>',
        '',
      ].join('\n'),
    );
    const run = spawnSync(dotnet, ['restore', join(project, 'restore.csproj'), '--packages', cache], {
      encoding: 'utf8',
      env: { ...env, DOTNET_CLI_TELEMETRY_OPTOUT: '1', DOTNET_NOLOGO: '1' },
    });
    if (run.status !== 0) {
      throw new Error(`dotnet restore of ${packageId} ${BICEP_VERSION} failed (exit ${run.status}):\n${run.stdout}${run.stderr}`);
    }
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}

/** The SDK's own framework (`net10.0` for SDK 10.x): its reference pack ships with it, so the restore asks NuGet for the Bicep package only. */
function targetFramework(dotnet: string): string {
  const version = spawnSync(dotnet, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
  const major = /^(\d+)\./.exec(version)?.[1];
  return major ? `net${major}.0` : 'net8.0';
}

const DIAGNOSTIC = /^(.*)\((\d+),(\d+)\)\s*:\s*(Error|Warning|Info)\s+([A-Za-z0-9-]+):\s*(.*)$/;

/** Parses the diagnostic lines a Bicep CLI writes to stderr. */
export function parseDiagnostics(stderr: string): { diagnostics: BicepDiagnostic[]; other: string } {
  const diagnostics: BicepDiagnostic[] = [];
  const other: string[] = [];
  for (const line of stderr.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const m = DIAGNOSTIC.exec(line.trim());
    if (m) diagnostics.push({ file: m[1], line: Number(m[2]), column: Number(m[3]), level: m[4] as BicepDiagnostic['level'], code: m[5], message: m[6] });
    else other.push(line);
  }
  return { diagnostics, other: other.join('\n') };
}

/** Runs one Bicep CLI verb. */
export function runBicep(cli: BicepCli, args: readonly string[]): BicepRun {
  const run = spawnSync(cli.command, [...cli.prefix, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (run.error) throw run.error;
  const { diagnostics, other } = parseDiagnostics(run.stderr ?? '');
  return { status: run.status ?? 1, stdout: run.stdout ?? '', diagnostics, otherOutput: other };
}

/** The CLI's own version line, e.g. "Bicep CLI version 0.49.2 (b34271ac51)". */
export function bicepVersion(cli: BicepCli): string {
  return runBicep(cli, ['--version']).stdout.trim();
}
