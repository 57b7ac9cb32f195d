import { createHash } from 'node:crypto';

/**
 * A small evaluator of ARM template expressions (`"[format('{0}', parameters('x'))]"`), enough to read
 * what the compiled infra/main.bicep would deploy: parameters, variables, module outputs through
 * `reference(...)`, and the functions Bicep emits for this project. Values Azure fills in at deployment
 * (a storage account's endpoints, a component's connection string) come back as {@link AzureValue}
 * placeholders. An unknown function throws, so a template change that this cannot read fails a test
 * instead of passing unread.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A value only Azure knows (e.g. `reference(storage).primaryEndpoints.table`): an https URL naming its path. */
export class AzureValue {
  constructor(readonly path: string) {}
  toString(): string {
    return `https://azure-fills-in.invalid/${encodeURIComponent(this.path)}`;
  }
}

const azureValue = (path: string): unknown =>
  new Proxy(new AzureValue(path), {
    get(target, prop) {
      if (prop in target || typeof prop === 'symbol') return Reflect.get(target, prop);
      return azureValue(`${path}.${String(prop)}`);
    },
  });

export interface Scope {
  /** Parameter values given to this template (defaults apply to the rest). */
  readonly parameters: Record<string, unknown>;
  readonly template: TemplateJson;
  /** Module outputs by deployment name, for `reference(<deployment id>).outputs.X.value`. */
  readonly modules?: Map<string, () => Record<string, unknown>>;
  readonly copyIndex?: number;
  /** Indexes of named copy loops (variable loops: `copyIndex('name')`). */
  readonly loops?: Readonly<Record<string, number>>;
}

export interface TemplateJson {
  parameters?: Record<string, { type: string; defaultValue?: Json; minLength?: number; allowedValues?: Json[] }>;
  variables?: Record<string, Json>;
  /** An array, or (languageVersion 2.0, symbolic names) an object keyed by symbolic name. */
  resources: ResourceJson[] | Record<string, ResourceJson>;
  outputs?: Record<string, OutputJson>;
}

/** A template output: a value, or (a Bicep for-expression) a copy loop of `count` items of `input`. */
export interface OutputJson {
  type: string;
  value?: Json;
  copy?: { count: Json; input: Json };
}

export interface ResourceJson {
  /** The symbolic name (languageVersion 2.0 templates). */
  symbol?: string;
  existing?: boolean;
  type: string;
  name: string;
  apiVersion?: string;
  condition?: Json;
  copy?: { name: string; count: Json };
  properties?: Record<string, Json> & { template?: TemplateJson; parameters?: Record<string, { value: Json }> };
  [key: string]: unknown;
}

type Token = { kind: 'ident' | 'string' | 'number' | 'punct'; text: string };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'") {
      let text = '';
      i++;
      for (;;) {
        if (i >= source.length) throw new Error(`unterminated string in ${source}`);
        if (source[i] === "'") {
          if (source[i + 1] === "'") {
            text += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        text += source[i++];
      }
      tokens.push({ kind: 'string', text });
    } else if (/[0-9-]/.test(c)) {
      const m = /^-?[0-9]+(\.[0-9]+)?/.exec(source.slice(i));
      if (!m) throw new Error(`bad number at ${i} in ${source}`);
      tokens.push({ kind: 'number', text: m[0] });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(i))!;
      tokens.push({ kind: 'ident', text: m[0] });
      i += m[0].length;
    } else if ('(),.[]'.includes(c)) {
      tokens.push({ kind: 'punct', text: c });
      i++;
    } else {
      throw new Error(`unexpected ${c} in ${source}`);
    }
  }
  return tokens;
}

/** True for a string ARM treats as an expression. */
export function isExpression(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith('[') && value.endsWith(']') && !value.startsWith('[[');
}

export class ArmEvaluator {
  /**
   * @param variableCache shared with the evaluators of a variable loop's items: a variable's value does not depend on
   * another variable's loop index, and a loop that reads another loop (`for shard in shards`) would else recompute it
   * for every item (quadratic in the shards).
   */
  constructor(
    private readonly scope: Scope,
    private readonly variableCache = new Map<string, unknown>(),
  ) {}

  /** The same scope inside iteration `index` of a copy loop. */
  withCopyIndex(index: number): ArmEvaluator {
    return new ArmEvaluator({ ...this.scope, copyIndex: index });
  }

  /** The value of a template output, copy loops included. */
  outputValue(output: OutputJson): unknown {
    if (!output.copy) return this.value(output.value);
    const count = this.value(output.copy.count) as number;
    return Array.from({ length: count }, (_, i) => this.withCopyIndex(i).value(output.copy!.input));
  }

  /** Evaluates a JSON value: expressions in strings, deeply in arrays and objects. */
  value(json: unknown): unknown {
    if (isExpression(json)) return this.expression(json.slice(1, -1));
    if (typeof json === 'string' && json.startsWith('[[')) return json.slice(1);
    if (Array.isArray(json)) return json.map((v) => this.value(v));
    if (json && typeof json === 'object' && !(json instanceof AzureValue)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(json)) out[k] = this.value(v);
      return out;
    }
    return json;
  }

  parameter(name: string): unknown {
    if (name in this.scope.parameters) return this.scope.parameters[name];
    const declared = this.scope.template.parameters?.[name];
    if (!declared) throw new Error(`parameters('${name}') is not declared`);
    if (declared.defaultValue === undefined) throw new Error(`required parameter ${name} has no value`);
    return this.value(declared.defaultValue);
  }

  variable(name: string): unknown {
    if (!this.variableCache.has(name)) {
      const loop = (this.scope.template.variables?.copy as unknown as Array<{ name: string; count: Json; input: Json }> | undefined)?.find(
        (c) => c.name === name,
      );
      if (loop) {
        const count = this.value(loop.count) as number;
        const items = Array.from({ length: count }, (_, i) =>
          new ArmEvaluator({ ...this.scope, loops: { ...this.scope.loops, [name]: i } }, this.variableCache).value(loop.input),
        );
        this.variableCache.set(name, items);
        return items;
      }
      const declared = name === 'copy' ? undefined : this.scope.template.variables?.[name];
      if (declared === undefined) throw new Error(`variables('${name}') is not declared`);
      this.variableCache.set(name, this.value(declared));
    }
    return this.variableCache.get(name);
  }

  expression(source: string): unknown {
    const tokens = tokenize(source);
    let pos = 0;
    const peek = () => tokens[pos];
    const take = (text?: string) => {
      const t = tokens[pos++];
      if (!t || (text !== undefined && t.text !== text)) throw new Error(`expected ${text ?? 'a token'} at ${pos} in ${source}`);
      return t;
    };
    const parse = (): unknown => {
      const t = take();
      let value: unknown;
      if (t.kind === 'string') value = t.text;
      else if (t.kind === 'number') value = Number(t.text);
      else if (t.kind === 'ident') {
        take('(');
        const args: unknown[] = [];
        while (peek()?.text !== ')') {
          args.push(parse());
          if (peek()?.text === ',') take(',');
        }
        take(')');
        value = this.call(t.text, args);
      } else throw new Error(`unexpected ${t.text} in ${source}`);
      for (;;) {
        if (peek()?.text === '.') {
          take('.');
          value = member(value, take().text);
        } else if (peek()?.text === '[') {
          take('[');
          const index = parse();
          take(']');
          value = member(value, index as string | number);
        } else return value;
      }
    };
    const result = parse();
    if (pos !== tokens.length) throw new Error(`trailing tokens in ${source}`);
    return result;
  }

  private call(name: string, args: unknown[]): unknown {
    const fn = name.toLowerCase();
    const num = (v: unknown) => {
      if (typeof v !== 'number') throw new Error(`${name}: ${String(v)} is not a number`);
      return v;
    };
    switch (fn) {
      case 'parameters':
        return this.parameter(args[0] as string);
      case 'variables':
        return this.variable(args[0] as string);
      case 'copyindex': {
        const named = typeof args[0] === 'string' ? (args.shift() as string) : undefined;
        const index = named === undefined ? this.scope.copyIndex : this.scope.loops?.[named];
        if (index === undefined) throw new Error(`copyIndex(${named ?? ''}) outside its copy loop`);
        return index + (args.length ? num(args[0]) : 0);
      }
      case 'string':
        return typeof args[0] === 'string' ? args[0] : args[0] instanceof AzureValue ? String(args[0]) : JSON.stringify(args[0]);
      case 'format':
        return (args[0] as string).replace(/\{(\d+)\}/g, (_, i: string) => String(args[Number(i) + 1]));
      case 'concat':
        return Array.isArray(args[0]) ? (args as unknown[][]).flat() : args.map(String).join('');
      case 'add':
        return num(args[0]) + num(args[1]);
      case 'sub':
        return num(args[0]) - num(args[1]);
      case 'mul':
        return num(args[0]) * num(args[1]);
      case 'div':
        return Math.trunc(num(args[0]) / num(args[1]));
      case 'max':
        return Math.max(...args.map(num));
      case 'min':
        return Math.min(...args.map(num));
      case 'equals':
        return args[0] === args[1];
      case 'greater':
        return (args[0] as number) > (args[1] as number);
      case 'greaterOrEquals':
        return (args[0] as number) >= (args[1] as number);
      case 'less':
        return (args[0] as number) < (args[1] as number);
      case 'lessOrEquals':
        return (args[0] as number) <= (args[1] as number);
      case 'not':
        return !args[0];
      case 'and':
        return args.every(Boolean);
      case 'or':
        return args.some(Boolean);
      case 'if':
        return args[0] ? args[1] : args[2];
      case 'empty':
        return (
          args[0] === '' ||
          args[0] === null ||
          (Array.isArray(args[0]) && args[0].length === 0) ||
          (typeof args[0] === 'object' && args[0] !== null && !(args[0] instanceof AzureValue) && Object.keys(args[0]).length === 0)
        );
      case 'length':
        return Array.isArray(args[0]) || typeof args[0] === 'string' ? (args[0] as string).length : Object.keys(args[0] as object).length;
      case 'tolower':
        return String(args[0]).toLowerCase();
      case 'split':
        return String(args[0]).split(String(args[1]));
      case 'join':
        return (args[0] as unknown[]).map(String).join(String(args[1]));
      case 'take':
        return typeof args[0] === 'string' ? args[0].slice(0, num(args[1])) : (args[0] as unknown[]).slice(0, num(args[1]));
      case 'true':
        return true;
      case 'false':
        return false;
      case 'null':
        return null;
      case 'createobject': {
        const out: Record<string, unknown> = {};
        for (let i = 0; i + 1 < args.length; i += 2) out[args[i] as string] = args[i + 1];
        return out;
      }
      case 'createarray':
        return args;
      case 'range':
        return Array.from({ length: num(args[1]) }, (_, i) => num(args[0]) + i);
      case 'flatten':
        return (args[0] as unknown[][]).flat();
      case 'tryget': {
        // tryGet(value, key...): null where a key is missing or the value is null (Bicep's `.?`).
        let value: unknown = args[0];
        for (const key of args.slice(1)) {
          if (value === null || value === undefined) return null;
          if (value instanceof AzureValue) return member(value, key as string | number);
          value = (value as Record<string | number, unknown>)[key as string | number];
        }
        return value ?? null;
      }
      case 'coalesce':
        return args.find((a) => a !== null && a !== undefined) ?? null;
      case 'environment':
        // AzureCloud's suffixes (the values `az cloud show` prints for the public cloud).
        return { name: 'AzureCloud', suffixes: { storage: 'core.windows.net', keyvaultDns: '.vault.azure.net' } };
      case 'union':
        return Object.assign({}, ...(args as object[]));
      case 'uniquestring':
        return createHash('sha256').update(args.map(String).join('|')).digest('hex').slice(0, 13);
      case 'guid':
        return createHash('sha256').update(args.map(String).join('|')).digest('hex').slice(0, 32);
      case 'subscription':
        return { id: '/subscriptions/00000000-0000-0000-0000-000000000000', subscriptionId: '00000000-0000-0000-0000-000000000000', tenantId: 'tenant' };
      case 'deployment':
        return { name: 'main' };
      case 'tenant':
        return { tenantId: '11111111-1111-1111-1111-111111111111' };
      case 'resourcegroup':
        return { id: '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg', name: 'rg', location: 'placeholder' };
      case 'resourceid':
      case 'subscriptionresourceid':
      case 'extensionresourceid': {
        // The last name argument is what the tests look for; the rest keeps it readable.
        const strings = args.map(String);
        const typeIndex = strings.findIndex((s) => /^[A-Za-z]+\.[A-Za-z]+\//.test(s));
        return `${fn}:${strings.slice(typeIndex).join('/')}`;
      }
      case 'reference': {
        const id = String(args[0]);
        // A module by symbolic name (`reference('storage')`) or by deployment id.
        const moduleName = /^(?:resourceid|extensionresourceid):Microsoft\.Resources\/deployments\/(.+)$/.exec(id)?.[1] ?? id;
        if (this.scope.modules?.has(moduleName)) {
          const outputs = this.scope.modules.get(moduleName)!();
          return { outputs: Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, { value: v }])) };
        }
        return azureValue(`reference(${id})`);
      }
      default:
        throw new Error(`ARM function ${name}() is not modelled by test/support/armExpressions.ts`);
    }
  }
}

/** A template's resources as an array, each with its symbolic name when it has one. */
export function resourcesOf(template: TemplateJson): ResourceJson[] {
  return Array.isArray(template.resources) ? template.resources : Object.entries(template.resources).map(([symbol, r]) => ({ ...r, symbol }));
}

function member(value: unknown, key: string | number): unknown {
  if (value instanceof AzureValue) return (value as unknown as Record<string, unknown>)[String(key)];
  if (value === null || value === undefined) throw new Error(`cannot read ${String(key)} of ${String(value)}`);
  const out = (value as Record<string | number, unknown>)[key];
  if (out === undefined) throw new Error(`no member ${String(key)} in ${JSON.stringify(value).slice(0, 200)}`);
  return out;
}
