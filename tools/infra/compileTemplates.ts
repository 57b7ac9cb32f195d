import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { REPO_ROOT } from '../cli/repoRoot';
import { bicepVersion, findBicep, runBicep, type BicepCli, type BicepDiagnostic } from './bicepCli';
import { SIZING_ROWS, type SizingRowParameters } from './sizingRows';
export { REPO_ROOT } from '../cli/repoRoot';

export const MAIN_BICEP = join(REPO_ROOT, 'infra', 'main.bicep');
/** Where the compiled ARM template goes (ignored by git, not deployed). */
export const COMPILED_TEMPLATE = join(REPO_ROOT, 'dist', 'infra', 'main.json');

/**
 * The deployment switches of infra/main.bicep (docs/deploy.md) and the values each is checked at: every combination is
 * compiled by the CLI. `shardCount` at 1 (the unsharded deployment) and 3 (a sharded one: every per-shard loop above one).
 */
export const DEPLOYMENT_SWITCHES = { vnetEnabled: [false, true], zoneRedundant: [false, true], shardCount: [1, 3] } as const;

type SwitchName = keyof typeof DEPLOYMENT_SWITCHES;
const SWITCH_NAMES = Object.keys(DEPLOYMENT_SWITCHES) as SwitchName[];

/** Values of the required parameters in every checked combination (what azd would pass). */
const REQUIRED_PARAMETERS = { environmentName: 'dev', location: 'swedencentral', paymentProviderUrl: 'https://provider.example.com' };

export type SwitchValues = { -readonly [K in SwitchName]: (typeof DEPLOYMENT_SWITCHES)[K][number] };

/** Every combination of the switches' values, the first value of each first; the first switch varies fastest. */
export function switchCombinations(): SwitchValues[] {
  let combinations: Array<Partial<SwitchValues>> = [{}];
  for (const name of [...SWITCH_NAMES].reverse()) {
    combinations = combinations.flatMap((rest) => DEPLOYMENT_SWITCHES[name].map((value) => ({ [name]: value, ...rest })));
  }
  return combinations.map((c) => Object.fromEntries(SWITCH_NAMES.map((name) => [name, c[name]])) as SwitchValues);
}

/** `vnetEnabled=true zoneRedundant=false shardCount=1`. */
export function combinationName(values: SwitchValues): string {
  return SWITCH_NAMES.map((name) => `${name}=${values[name]}`).join(' ');
}

/** What `bicep build-params` said about one combination of the switches. */
export interface CombinationResult {
  readonly values: SwitchValues;
  readonly errors: readonly BicepDiagnostic[];
  readonly warnings: readonly BicepDiagnostic[];
  readonly failures: readonly string[];
}

export interface CompileResult {
  readonly cli: BicepCli;
  readonly version: string;
  readonly templatePath: string;
  readonly errors: readonly BicepDiagnostic[];
  readonly warnings: readonly BicepDiagnostic[];
  /** Problems that are not diagnostics (the CLI crashed, wrote nothing). */
  readonly failures: readonly string[];
  /** Each combination of {@link DEPLOYMENT_SWITCHES}, compiled as a parameters file against main.bicep (none with `combinations: false`). */
  readonly combinations: readonly CombinationResult[];
  /** Each row of the sizing table ({@link SIZING_ROWS}), compiled the same way (none with `combinations: false`). */
  readonly sizingRows: readonly SizingRowResult[];
}

/** What `bicep build-params` said about one row of the sizing table. */
export interface SizingRowResult {
  readonly row: SizingRowParameters;
  readonly errors: readonly BicepDiagnostic[];
  readonly warnings: readonly BicepDiagnostic[];
  readonly failures: readonly string[];
}

/** `sizing 2000/s: shardCount=13 durablePartitionCount=16 serviceBusSku=Premium serviceBusMessagingUnits=4`. */
export function sizingRowName(row: SizingRowParameters): string {
  const { target, ...parameters } = row;
  return `sizing ${target}/s: ${Object.entries(parameters)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')}`;
}

/**
 * Compiles `infra/main.bicep` to ARM JSON and lints it, with the rules of `infra/bicepconfig.json`, then (unless
 * `combinations: false`) every combination of the deployment switches with `bicep build-params`.
 * Returns undefined when no Bicep CLI can be found or restored (see {@link findBicep}).
 */
export function compileTemplates(options: { outFile?: string; log?: (line: string) => void; combinations?: boolean } = {}): CompileResult | undefined {
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
    combinations: options.combinations === false ? [] : switchCombinations().map((values) => compileCombination(cli, values)),
    sizingRows:
      options.combinations === false
        ? []
        : SIZING_ROWS.map((row) => {
            const { target, ...parameters } = row;
            return { row, ...compileParameters(cli, `sizing-${target}`, { vnetEnabled: false, zoneRedundant: false, ...parameters }) };
          }),
  };
}

/**
 * One combination of the switches as a `.bicepparam` file (`using` main.bicep, the required parameters and the
 * switches), compiled with `bicep build-params`: the CLI checks every value against main.bicep's declarations (name,
 * type, allowed values) and reports its diagnostics. The file must name main.bicep by a relative path, so it is written
 * under dist/ (ignored by git), in a folder of its own per process, removed afterwards.
 */
function compileCombination(cli: BicepCli, values: SwitchValues): CombinationResult {
  return { values, ...compileParameters(cli, SWITCH_NAMES.map((s) => `${s}-${values[s]}`).join('.'), values) };
}

/** `values` (with the required parameters) as a `.bicepparam` file named `name`, compiled with `bicep build-params`. */
function compileParameters(
  cli: BicepCli,
  name: string,
  values: Readonly<Record<string, string | number | boolean>>,
): Pick<CombinationResult, 'errors' | 'warnings' | 'failures'> {
  const dir = join(REPO_ROOT, 'dist', 'infra', `combinations-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const paramFile = join(dir, `${name}.bicepparam`);
  const outFile = join(dir, `${name}.parameters.json`);
  const lines = [`using '${relative(dir, MAIN_BICEP).split('\\').join('/')}'`];
  for (const [k, v] of Object.entries({ ...REQUIRED_PARAMETERS, ...values })) lines.push(`param ${k} = ${typeof v === 'string' ? `'${v}'` : String(v)}`);
  writeFileSync(paramFile, `${lines.join('\n')}\n`);
  try {
    const az = cli.prefix.length > 0;
    const run = runBicep(
      cli,
      az ? ['build-params', '--file', paramFile, '--outfile', outFile, '--no-restore'] : ['build-params', paramFile, '--outfile', outFile, '--no-restore'],
    );
    const failures: string[] = [];
    if (run.status !== 0 && !run.diagnostics.some((d) => d.level === 'Error'))
      failures.push(`bicep build-params exited ${run.status}: ${run.otherOutput || run.stdout}`);
    if (run.status === 0 && !existsSync(outFile)) failures.push(`bicep build-params wrote no ${outFile}`);
    return {
      errors: run.diagnostics.filter((d) => d.level === 'Error'),
      warnings: run.diagnostics.filter((d) => d.level === 'Warning'),
      failures,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One diagnostic as the CLI prints it, with the path relative to the repository. */
export function formatDiagnostic(d: BicepDiagnostic): string {
  return `${relative(REPO_ROOT, d.file)}(${d.line},${d.column}) : ${d.level} ${d.code}: ${d.message}`;
}
