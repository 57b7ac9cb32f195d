import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The .ts files under `dir`, recursively (`skip` names folders to leave out, e.g. build output). */
export function filesUnder(dir: string, skip: readonly string[] = []): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return skip.includes(entry) ? [] : filesUnder(path, skip);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Import specifiers of a file (static imports, re-exports, require, dynamic import). */
export function specifiersOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|require\(\s*['"]([^'"]+)['"]\s*\)|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map(
    (m) => m[1] ?? m[2] ?? m[3],
  );
}

/** Relative imports of a file, resolved to .ts files. */
export function importsOf(file: string): string[] {
  return specifiersOf(file)
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

/** The import cycles among the graph's files, each as `a -> b -> a` (paths relative to `root`). */
export function cyclesOf(graph: ReadonlyMap<string, readonly string[]>, root: string): string[] {
  const cycles: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'visiting') {
      cycles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(root, f)).join(' -> '));
      return;
    }
    state.set(file, 'visiting');
    for (const next of graph.get(file) ?? []) if (graph.has(next)) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  return cycles;
}

/** The files over `maxLines` lines, as `path: N lines` (relative to `root`). */
export function overLong(files: Iterable<string>, maxLines: number, root: string): string[] {
  return [...files]
    .map((f) => [relative(root, f), readFileSync(f, 'utf8').split('\n').length] as const)
    .filter(([, lines]) => lines > maxLines)
    .map(([f, lines]) => `${f}: ${lines} lines`);
}
