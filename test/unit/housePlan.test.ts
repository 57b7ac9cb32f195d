import { readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { cyclesOf, filesUnder, importsOf, overLong, specifiersOf } from '../support/importGraph';

/**
 * The house plan of docs/architecture.md (section 1), held for the app (src/) and the core package (packages/idempotency/src):
 * which room may import which, no import cycles, no file over 300 lines, registrations that import only the
 * wiring, the app reaching the core only by its package name, and the core importing no package but node's
 * built-ins and, in each store's room only, that store's SDK.
 */
const ROOT = join(__dirname, '..', '..');
const SRC = join(ROOT, 'src');
const CORE = join(ROOT, 'packages', 'idempotency', 'src');
const CORE_NAME = 'azure-functions-idempotency';
const MAX_LINES = 300;

/** App folder -> folders of src/ it may import (itself always allowed). The core is a package, not a folder. */
const APP_ALLOWED: Record<string, readonly string[]> = {
  config: [],
  telemetry: [],
  messaging: ['telemetry'],
  lifecycle: ['config', 'telemetry'],
  payments: ['config', 'messaging', 'telemetry', 'lifecycle'],
  orders: ['config', 'messaging', 'telemetry', 'lifecycle'],
  http: ['config', 'telemetry', 'payments'],
  rewards: ['config', 'messaging', 'telemetry'],
  app: ['config', 'telemetry', 'messaging', 'lifecycle', 'payments', 'orders', 'http', 'rewards'],
  functions: ['app'],
};

/**
 * Core room -> rooms it may import. The protocol (records, rules, errors, the store contract) imports nothing
 * else; the wrappers (single, batch, keys, digest, heartbeat) import the protocol; each store imports the
 * protocol only. `(entry)` is the package's entry points (`index.ts`, `internal.ts`), which re-export the rooms.
 */
const CORE_ALLOWED: Record<string, readonly string[]> = {
  protocol: [],
  wrappers: ['protocol'],
  'stores/table': ['protocol'],
  'stores/cosmos': ['protocol'],
  'stores/memory': ['protocol'],
  // The operator's console: the records of both stores (their encodings and SDK calls), beside the protocol.
  operator: ['protocol', 'stores/table', 'stores/cosmos'],
  '(entry)': ['protocol', 'wrappers', 'stores/table', 'stores/cosmos', 'stores/memory', 'operator'],
};

/** Packages a core room may import (besides `node:` built-ins). */
const CORE_PACKAGES: Record<string, readonly string[]> = {
  'stores/table': ['@azure/data-tables'],
  'stores/cosmos': ['@azure/cosmos'],
  // Optional peers, each loaded only when a command needs it (types, or `import()`: never a static value import).
  operator: ['@azure/data-tables', '@azure/cosmos', '@azure/identity', '@azure/service-bus'],
};

/** Packages of the operator's room: type imports and dynamic `import()` only, so none is loaded before it is needed. */
const LAZY_PACKAGES = CORE_PACKAGES.operator;

const appFolderOf = (file: string) => relative(SRC, file).split(sep)[0];
function coreRoomOf(file: string): string {
  const parts = relative(CORE, file).split(sep);
  if (parts.length === 1) return '(entry)';
  return parts[0] === 'stores' ? `stores/${parts[1]}` : parts[0];
}

const appFiles = filesUnder(SRC);
const coreFiles = filesUnder(CORE);
const graph = new Map([...appFiles, ...coreFiles].map((f) => [f, importsOf(f)]));

/** Violations of a plan: imports leaving the tree, unresolved, or to a room the plan does not allow. */
function violationsOf(root: string, files: readonly string[], roomOf: (file: string) => string, allowed: Record<string, readonly string[]>): string[] {
  const violations: string[] = [];
  for (const file of files) {
    const from = roomOf(file);
    for (const target of graph.get(file) ?? []) {
      const rel = relative(root, target);
      if (rel.startsWith('..') || target.endsWith('(unresolved)')) violations.push(`${relative(root, file)} -> ${rel}`);
      else if (roomOf(target) !== from && !allowed[from]?.includes(roomOf(target))) violations.push(`${relative(root, file)} -> ${rel}`);
    }
  }
  return violations;
}

describe('the house plan (docs/architecture.md)', () => {
  test('every folder of src/ and every room of the core package is in the plan', () => {
    expect([...new Set(appFiles.map(appFolderOf))].filter((folder) => !(folder in APP_ALLOWED))).toEqual([]);
    expect([...new Set(coreFiles.map(coreRoomOf))].sort()).toEqual(Object.keys(CORE_ALLOWED).sort());
  });

  test('src/ imports follow the plan; nothing in src/ imports tools/, test/ or the core by path', () => {
    expect(violationsOf(SRC, appFiles, appFolderOf, APP_ALLOWED)).toEqual([]);
  });

  test('src/ imports the core only through its package name (a published subpath)', () => {
    const exportsMap = (JSON.parse(readFileSync(join(ROOT, 'packages', 'idempotency', 'package.json'), 'utf8')) as { exports: Record<string, unknown> })
      .exports;
    const named = appFiles.flatMap((f) => specifiersOf(f).filter((s) => s.startsWith(CORE_NAME)));
    expect(named.length).toBeGreaterThan(50);
    expect([...new Set(named)].filter((s) => !(`.${s.slice(CORE_NAME.length)}` in exportsMap))).toEqual([]);
  });

  test('src/ imports `/internal` (outside semver) only under a comment saying why; everything else comes from a public entry', () => {
    const internal = `${CORE_NAME}/internal`;
    const unexplained = appFiles.flatMap((f) => {
      const lines = readFileSync(f, 'utf8').split('\n');
      return lines.flatMap((line, i) =>
        line.includes(`'${internal}'`) && !/^\/\/ Internal: \S/.test(lines[i - 1] ?? '') ? [`${relative(SRC, f)}:${i + 1}`] : [],
      );
    });
    expect(unexplained).toEqual([]);
    const users = appFiles.filter((f) => specifiersOf(f).includes(internal));
    // The few that read the stores' rows and documents (the Cosmos hold pass, the reconciler and its keep-alive of
    // live runs' records through the sweep's hold pass) or reuse Table plumbing.
    // The Table expiry sweep is the package's (`azure-functions-idempotency/table`), not among them.
    expect(users.length).toBeGreaterThan(0);
    expect(users.length).toBeLessThanOrEqual(8);
  });

  test('the core: protocol imports no other room, wrappers import the protocol, each store imports the protocol only', () => {
    expect(violationsOf(CORE, coreFiles, coreRoomOf, CORE_ALLOWED)).toEqual([]);
  });

  test("the core imports no package but node's built-ins and, in a store's room, that store's SDK", () => {
    const outside = coreFiles.flatMap((f) =>
      specifiersOf(f)
        .filter((s) => !s.startsWith('.') && !s.startsWith('node:') && !(CORE_PACKAGES[coreRoomOf(f)] ?? []).includes(s))
        .map((s) => `${relative(CORE, f)} -> ${s}`),
    );
    expect(outside).toEqual([]);
  });

  test("the operator's console loads its optional peers lazily: `import type` or `import()`, never a static value import", () => {
    const eager = coreFiles
      .filter((f) => coreRoomOf(f) === 'operator')
      .flatMap((f) =>
        [...readFileSync(f, 'utf8').matchAll(/^import\s+(?!type\s)[^'"]*?from\s+['"]([^'"]+)['"]/gm)]
          .map((m) => m[1])
          .filter((spec) => LAZY_PACKAGES.includes(spec))
          .map((spec) => `${relative(CORE, f)} -> ${spec}`),
      );
    expect(eager).toEqual([]);
    const lazy = coreFiles.filter((f) => /import\(\s*'@azure\/(identity|service-bus|data-tables|cosmos)'\s*\)/.test(readFileSync(f, 'utf8')));
    expect(lazy.length).toBeGreaterThan(0);
  });

  test('no import cycles between files (app and core)', () => {
    const cycles = cyclesOf(graph, ROOT);
    expect(cycles).toEqual([]);
  });

  test(`no file in src/ or the core is over ${MAX_LINES} lines`, () => {
    const long = overLong(graph.keys(), MAX_LINES, ROOT);
    expect(long).toEqual([]);
  });

  test('registrations (src/functions) import only the wiring (src/app), the Functions and Durable packages', () => {
    const outside: string[] = [];
    for (const file of appFiles.filter((f) => appFolderOf(f) === 'functions')) {
      for (const spec of specifiersOf(file)) {
        if (spec.startsWith('.')) continue; // checked above
        if (!['@azure/functions', 'durable-functions'].includes(spec)) outside.push(`${relative(SRC, file)} -> ${spec}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
