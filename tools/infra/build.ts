import { relative } from 'node:path';
import { combinationName, compileTemplates, formatDiagnostic, REPO_ROOT, sizingRowName } from './compileTemplates';

/**
 * `npm run infra:build`: compiles and lints infra/main.bicep with the real Bicep CLI, then compiles a parameters file for
 * every combination of the deployment switches (vnetEnabled, zoneRedundant, shardCount at 1 and 3) and every row of the sizing table
 * (tools/infra/sizingRows.ts) against it; exit 0 only with zero errors
 * and warnings everywhere. Without any Bicep CLI it says so plainly; with CI=true that is a failure, never a skip.
 */
function main(): number {
  const ci = /^(1|true)$/i.test(process.env.CI ?? '');
  const result = compileTemplates({ log: (line) => console.log(`infra:build: ${line}`) });
  if (!result) {
    const message =
      'infra:build: NOT COMPILED: no Bicep CLI found (BICEP_CLI, bicep or az on PATH) and no dotnet to restore ' +
      'Azure.Bicep.CommandLine from NuGet. The templates in infra/ were not checked by a compiler.';
    if (ci) {
      console.error(`${message} CI=true: failing.`);
      return 1;
    }
    console.warn(message);
    return 0;
  }
  console.log(`infra:build: ${result.version} (${result.cli.source})`);
  for (const d of [...result.errors, ...result.warnings]) console.log(formatDiagnostic(d));
  for (const f of result.failures) console.log(`infra:build: ${f}`);
  console.log(`infra:build: ${result.errors.length} errors, ${result.warnings.length} warnings; ARM template: ${relative(REPO_ROOT, result.templatePath)}`);
  let clean = result.errors.length === 0 && result.warnings.length === 0 && result.failures.length === 0;
  for (const c of result.combinations) {
    for (const d of [...c.errors, ...c.warnings]) console.log(formatDiagnostic(d));
    for (const f of c.failures) console.log(`infra:build: ${f}`);
    console.log(`infra:build: ${combinationName(c.values)}: ${c.errors.length} errors, ${c.warnings.length} warnings (bicep build-params)`);
    clean &&= c.errors.length === 0 && c.warnings.length === 0 && c.failures.length === 0;
  }
  for (const c of result.sizingRows) {
    for (const d of [...c.errors, ...c.warnings]) console.log(formatDiagnostic(d));
    for (const f of c.failures) console.log(`infra:build: ${f}`);
    console.log(`infra:build: ${sizingRowName(c.row)}: ${c.errors.length} errors, ${c.warnings.length} warnings (bicep build-params)`);
    clean &&= c.errors.length === 0 && c.warnings.length === 0 && c.failures.length === 0;
  }
  return clean ? 0 : 1;
}

process.exitCode = main();
