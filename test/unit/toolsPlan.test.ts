import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { cyclesOf, filesUnder, importsOf, longFiles } from '../support/importGraph';

/**
 * The tools (demo, bench, cost, local stand-ins, producer, operator, the Durable host) are held to the rules of
 * src/ (docs/DESIGN.md "House plan"): no file over 300 lines, no import cycles, every relative import resolves.
 * ESLint runs the same rules over tools/ as over src/ (eslint.config.mjs has no tools override).
 */
const ROOT = join(__dirname, '..', '..');
const TOOLS = join(ROOT, 'tools');
const MAX_LINES = 300;
/** Build output of the local Durable host (dotnet), not source. */
const BUILD_OUTPUT = ['bin', 'obj'];

/** The C# sources of the local Durable host (tools/durable-host), held to the same size. */
function csharpUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return BUILD_OUTPUT.includes(entry) ? [] : csharpUnder(path);
    return path.endsWith('.cs') ? [path] : [];
  });
}

const toolFiles = filesUnder(TOOLS, BUILD_OUTPUT);
const graph = new Map(toolFiles.map((f) => [f, importsOf(f)]));

describe('the tools follow the house rules of src/', () => {
  test('the tools are read (a guard against an empty walk)', () => {
    expect(toolFiles.length).toBeGreaterThan(50);
    expect(csharpUnder(TOOLS).length).toBeGreaterThan(3);
  });

  test(`no file in tools/ is over ${MAX_LINES} lines (TypeScript and the Durable host's C#)`, () => {
    expect(longFiles([...toolFiles, ...csharpUnder(TOOLS)], ROOT, MAX_LINES)).toEqual([]);
  });

  test('no import cycles between the files of tools/ (no file imports its importer)', () => {
    expect(cyclesOf(graph, ROOT)).toEqual([]);
  });

  test('every relative import of tools/ resolves to a file', () => {
    const unresolved = [...graph].flatMap(([file, targets]) => targets.filter((t) => t.endsWith('(unresolved)')).map((t) => `${relative(ROOT, file)} -> ${t}`));
    expect(unresolved).toEqual([]);
  });
});
