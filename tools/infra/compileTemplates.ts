import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { REPO_ROOT } from '../cli/repoRoot';
import { bicepVersion, findBicep, runBicep, type BicepCli, type BicepDiagnostic } from './bicepCli';
export { REPO_ROOT } from '../cli/repoRoot';

export const MAIN_BICEP = join(REPO_ROOT, 'infra', 'main.bicep');
/** Where the compiled ARM template goes (ignored by git, not deployed). */
export const COMPILED_TEMPLATE = join(REPO_ROOT, 'dist', 'infra', 'main.json');

export interface CompileResult {
  readonly cli: BicepCli;
  readonly version: string;
  readonly templatePath: string;
  readonly errors: readonly BicepDiagnostic[];
  readonly warnings: readonly BicepDiagnostic[];
  /** Problems that are not diagnostics (the CLI crashed, wrote nothing). */
  readonly failures: readonly string[];
}

/**
 * Compiles `infra/main.bicep` to ARM JSON and lints it, with the rules of `infra/bicepconfig.json`.
 * Returns undefined when no Bicep CLI can be found or restored (see {@link findBicep}).
 */
export function compileTemplates(options: { outFile?: string; log?: (line: string) => void } = {}): CompileResult | undefined {
  const cli = findBicep(process.env, options.log);
  if (!cli) return undefined;
  const outFile = options.outFile ?? COMPILED_TEMPLATE;
  mkdirSync(dirname(outFile), { recursive: true });
  const az = cli.prefix.length > 0;
  // --no-restore: the templates use no registry modules, and without it the CLI fetches the public
  // module index (aka.ms) on every build and lint: traffic to the internet that builds and tests must not send.
  const build = runBicep(
    cli,
    az ? ['build', '--file', MAIN_BICEP, '--outfile', outFile, '--no-restore'] : ['build', MAIN_BICEP, '--outfile', outFile, '--no-restore'],
  );
  const lint = runBicep(cli, az ? ['lint', '--file', MAIN_BICEP, '--no-restore'] : ['lint', MAIN_BICEP, '--no-restore']);
  // build and lint report the same linter diagnostics: count each once.
  const seen = new Map<string, BicepDiagnostic>();
  for (const d of [...build.diagnostics, ...lint.diagnostics]) seen.set(`${d.file}:${d.line}:${d.column}:${d.code}`, d);
  const all = [...seen.values()];
  const failures: string[] = [];
  if (build.status !== 0 && !all.some((d) => d.level === 'Error')) failures.push(`bicep build exited ${build.status}: ${build.otherOutput || build.stdout}`);
  if (lint.status !== 0 && !all.some((d) => d.level === 'Error')) failures.push(`bicep lint exited ${lint.status}: ${lint.otherOutput || lint.stdout}`);
  if (build.status === 0 && !existsSync(outFile)) failures.push(`bicep build wrote no ${outFile}`);
  return {
    cli,
    version: bicepVersion(cli),
    templatePath: outFile,
    errors: all.filter((d) => d.level === 'Error'),
    warnings: all.filter((d) => d.level === 'Warning'),
    failures,
  };
}

/** One diagnostic as the CLI prints it, with the path relative to the repository. */
export function formatDiagnostic(d: BicepDiagnostic): string {
  return `${relative(REPO_ROOT, d.file)}(${d.line},${d.column}) : ${d.level} ${d.code}: ${d.message}`;
}
