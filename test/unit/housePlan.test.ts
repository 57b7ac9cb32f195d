import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * The house plan of docs/DESIGN.md, held: which folder of src/ may import which, no import cycles,
 * no file over 300 lines, and registrations that import only the wiring.
 */
const SRC = join(__dirname, '..', '..', 'src');
const MAX_LINES = 300;

/** Folder -> folders of src/ it may import (itself always allowed). */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  config: ['core'],
  telemetry: ['core'],
  messaging: ['core', 'telemetry'],
  lifecycle: ['core', 'config', 'telemetry'],
  payments: ['core', 'config', 'messaging', 'telemetry', 'lifecycle'],
  orders: ['core', 'config', 'messaging', 'telemetry', 'lifecycle'],
  http: ['core', 'config', 'telemetry', 'payments'],
  rewards: ['core', 'config', 'messaging', 'telemetry'],
  app: ['core', 'config', 'telemetry', 'messaging', 'lifecycle', 'payments', 'orders', 'http', 'rewards'],
  functions: ['app'],
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports of a file (static imports, re-exports, require), resolved to .ts files. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|require\(\s*['"]([^'"]+)['"]\s*\)|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map(
    (m) => m[1] ?? m[2] ?? m[3],
  );
  return specs
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => {
      const base = resolve(dirname(file), spec);
      for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
        try {
          if (statSync(candidate).isFile()) return candidate;
        } catch {
          // try the next form
        }
      }
      return `${base} (unresolved)`;
    });
}

const folderOf = (file: string) => relative(SRC, file).split(sep)[0];
const files = filesUnder(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

describe('the house plan (docs/DESIGN.md)', () => {
  test('every folder of src/ is in the plan', () => {
    expect([...new Set(files.map(folderOf))].filter((folder) => !(folder in ALLOWED))).toEqual([]);
  });

  test('imports follow the plan; nothing in src/ imports tools/ or test/', () => {
    const violations: string[] = [];
    for (const [file, imports] of graph) {
      const from = folderOf(file);
      for (const target of imports) {
        const rel = relative(SRC, target);
        if (rel.startsWith('..') || target.endsWith('(unresolved)')) {
          violations.push(`${relative(SRC, file)} -> ${rel}`);
          continue;
        }
        const to = folderOf(target);
        if (to !== from && !ALLOWED[from]?.includes(to)) violations.push(`${relative(SRC, file)} -> ${rel}`);
      }
    }
    expect(violations).toEqual([]);
  });

  test('no import cycles between files', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'visiting') {
        cycles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(SRC, f)).join(' -> '));
        return;
      }
      state.set(file, 'visiting');
      for (const next of graph.get(file) ?? []) if (graph.has(next)) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });

  test(`no file in src/ is over ${MAX_LINES} lines`, () => {
    const long = files.map((f) => [relative(SRC, f), readFileSync(f, 'utf8').split('\n').length] as const).filter(([, lines]) => lines > MAX_LINES);
    expect(long).toEqual([]);
  });

  test('registrations (src/functions) import only the wiring (src/app), the Functions and Durable packages', () => {
    const outside: string[] = [];
    for (const file of files.filter((f) => folderOf(f) === 'functions')) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/from\s+['"]([^'"]+)['"]/g)) {
        const spec = m[1];
        if (spec.startsWith('.')) continue; // checked above
        if (!['@azure/functions', 'durable-functions'].includes(spec)) outside.push(`${relative(SRC, file)} -> ${spec}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
