import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileTemplates, formatDiagnostic, type CompileResult } from '../../tools/infra/compileTemplates';
import { ArmEvaluator, resourcesOf, type ResourceJson, type TemplateJson } from './armExpressions';

/**
 * infra/main.bicep compiled by the real Bicep CLI (once per test process), and what a deployment of
 * it would set, evaluated with {@link ArmEvaluator}. Without a Bicep CLI (and no dotnet to restore
 * one) the tests that need it are skipped with a notice, except under CI=true, where that fails.
 */
let compiled: TemplateJson | undefined | null;

export function compiledMainTemplate(): TemplateJson | undefined {
  if (compiled === undefined) {
    const outFile = join(mkdtempSync(join(tmpdir(), 'infra-')), 'main.json');
    const result = compileTemplates({ outFile, combinations: false });
    if (!result) {
      if (/^(1|true)$/i.test(process.env.CI ?? '')) throw new Error('CI=true and no Bicep CLI: the compiled-template tests cannot run');
      console.warn('NOT COMPILED: no Bicep CLI or dotnet here; the compiled-template tests are skipped');
      compiled = null;
    } else {
      if (result.errors.length > 0 || result.failures.length > 0) {
        throw new Error(`bicep build failed:\n${[...result.errors.map(formatDiagnostic), ...result.failures].join('\n')}`);
      }
      compiled = JSON.parse(readFileSync(outFile, 'utf8')) as TemplateJson;
    }
  }
  return compiled ?? undefined;
}

/**
 * Every combination of the deployment switches compiled by the real CLI (`bicep build-params` against main.bicep, as
 * `npm run infra:build` does); undefined without a Bicep CLI (see {@link compiledMainTemplate}). About 5 s a combination.
 */
export function compiledCombinations(): CompileResult['combinations'] | undefined {
  if (!compiledMainTemplate()) return undefined;
  const result = compileTemplates({ outFile: join(mkdtempSync(join(tmpdir(), 'infra-')), 'main.json') });
  return result?.combinations;
}

/** `describe` when the template compiled here, `describe.skip` otherwise (see {@link compiledMainTemplate}). */
export const describeCompiled = (name: string, fn: () => void) => (compiledMainTemplate() ? describe(name, fn) : describe.skip(name, fn));

/** The parameter values `azd up` passes: infra/main.parameters.json with the azd variables given in `env`. */
export function azdParameters(env: Record<string, string>): Record<string, unknown> {
  const file = JSON.parse(readFileSync(join(__dirname, '..', '..', 'infra', 'main.parameters.json'), 'utf8')) as {
    parameters: Record<string, { value: unknown }>;
  };
  const out: Record<string, unknown> = {};
  for (const [name, { value }] of Object.entries(file.parameters)) {
    out[name] =
      typeof value === 'string'
        ? value.replace(/\$\{([A-Z0-9_]+)(?:=([^}]*))?\}/g, (_, variable: string, fallback: string | undefined) => env[variable] ?? fallback ?? '')
        : value;
  }
  return out;
}

/**
 * Parameter values as azd passes them: a string for a `bool` or `int` parameter is converted when it reads as
 * one (azure-dev `pkg/infra/provisioning/bicep/bicep_provider.go` `armParameterFileValue`), so
 * `"${KEY_VAULT_PURGE_PROTECTION=false}"` deploys `false`, not the truthy string "false".
 */
function armParameterValues(template: TemplateJson, given: Record<string, unknown>): Record<string, unknown> {
  const declared = (template as { parameters?: Record<string, { type?: string }> }).parameters ?? {};
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(given)) {
    const type = declared[name]?.type?.toLowerCase();
    if (typeof value === 'string' && type === 'bool' && /^(true|false)$/i.test(value)) out[name] = value.toLowerCase() === 'true';
    else if (typeof value === 'string' && type === 'int' && /^-?\d+$/.test(value)) out[name] = Number(value);
    else out[name] = value;
  }
  return out;
}

/** A module (nested deployment) of main.bicep, with its parameters evaluated in main's scope. */
export interface DeployedModule {
  readonly name: string;
  readonly template: TemplateJson;
  readonly evaluator: ArmEvaluator;
  /** The module's resources whose condition holds, with names and properties evaluated. */
  resources(): Array<{ type: string; name: unknown; scope?: unknown; properties: Record<string, unknown> }>;
}

/** A deployment of main.bicep with `parameters`: its modules, evaluated on demand. */
export class Deployment {
  readonly main: ArmEvaluator;
  readonly modules: DeployedModule[] = [];

  constructor(
    readonly template: TemplateJson,
    given: Record<string, unknown>,
  ) {
    const parameters = armParameterValues(template, given);
    const outputs = new Map<string, () => Record<string, unknown>>();
    this.main = new ArmEvaluator({ template, parameters, modules: outputs });
    for (const resource of resourcesOf(template)) {
      if (resource.type !== 'Microsoft.Resources/deployments') continue;
      const count = resource.copy ? (this.main.value(resource.copy.count) as number) : 1;
      for (let i = 0; i < count; i++) {
        const outer = resource.copy ? new ArmEvaluator({ template, parameters, modules: outputs, copyIndex: i }) : this.main;
        if (resource.condition !== undefined && !outer.value(resource.condition)) continue;
        const module = this.moduleOf(resource, outer);
        this.modules.push(module);
        // A looped module's iterations are referenced as `symbol[i]` (`reference(format('storage[{0}]', i))`).
        outputs.set(resource.copy && resource.symbol ? `${resource.symbol}[${i}]` : (resource.symbol ?? module.name), () => {
          const out: Record<string, unknown> = {};
          for (const [k, v] of Object.entries(module.template.outputs ?? {})) out[k] = module.evaluator.outputValue(v);
          return out;
        });
      }
    }
  }

  private moduleOf(resource: ResourceJson, outer: ArmEvaluator): DeployedModule {
    const template = resource.properties!.template!;
    const parameters: Record<string, unknown> = {};
    // A module parameter is `{ value: ... }`, or an expression that yields one (Bicep emits `[if(c, createObject('value', a), ...)]`).
    for (const [k, v] of Object.entries(resource.properties!.parameters ?? {})) parameters[k] = (outer.value(v) as { value: unknown }).value;
    // The modules deploy no modules of their own: `reference(...)` inside one is an Azure value.
    const evaluator = new ArmEvaluator({ template, parameters });
    return {
      name: String(outer.value(resource.name)),
      template,
      evaluator,
      resources: () =>
        resourcesOf(template)
          .filter((r) => !r.existing)
          .flatMap((r) => {
            const count = r.copy ? (evaluator.value(r.copy.count) as number) : 1;
            return Array.from({ length: count }, (_, i) => (r.copy ? evaluator.withCopyIndex(i) : evaluator))
              .filter((e) => r.condition === undefined || e.value(r.condition))
              .map((e) => ({
                type: r.type,
                name: e.value(r.name),
                scope: r.scope === undefined ? undefined : e.value(r.scope),
                properties: (e.value(r.properties ?? {}) ?? {}) as Record<string, unknown>,
              }));
          }),
    };
  }

  /** Modules that deploy a resource of `type`. */
  modulesWith(type: string): DeployedModule[] {
    return this.modules.filter((m) => resourcesOf(m.template).some((r) => r.type === type && !r.existing));
  }

  /** The one module that deploys a resource of `type`. */
  moduleWith(type: string): DeployedModule {
    const found = this.modulesWith(type);
    if (found.length !== 1) throw new Error(`${found.length} modules deploy ${type}`);
    return found[0];
  }

  /** Every resource of every module, evaluated. */
  allResources(): Array<{ module: string; type: string; name: unknown; properties: Record<string, unknown> }> {
    return this.modules.flatMap((m) => m.resources().map((r) => ({ module: m.name, ...r })));
  }

  /** The Function App's app settings as deployed (values Azure fills in are placeholders); the one app, or shard `shard`'s. */
  appSettings(shard?: number): Record<string, string> {
    const apps = this.modulesWith('Microsoft.Web/sites');
    if (shard === undefined && apps.length !== 1) throw new Error(`${apps.length} modules deploy Microsoft.Web/sites: name the shard`);
    const app = apps[shard ?? 0];
    if (!app) throw new Error(`no Function App of shard ${shard}`);
    const config = app.resources().find((r) => r.type === 'Microsoft.Web/sites/config' && String(r.name).endsWith('/appsettings'));
    if (!config) throw new Error('no Microsoft.Web/sites/config appsettings resource');
    return Object.fromEntries(Object.entries(config.properties).map(([k, v]) => [k, String(v)]));
  }
}
