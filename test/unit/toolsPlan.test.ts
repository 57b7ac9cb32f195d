import { join } from 'node:path';
import { cyclesOf, filesUnder, importsOf, overLong } from '../support/importGraph';

/**
 * tools/ is held to src/'s size and cycle rules (issue 36): no .ts file over 300 lines, no file that imports its
 * importer, directly or around a longer circle. A failure names the files. (eslint.config.mjs lints tools/ with
 * src/'s rules; only test/ has relaxations.)
 */
const ROOT = join(__dirname, '..', '..');
const MAX_LINES = 300;
const files = filesUnder(join(ROOT, 'tools'), ['bin', 'obj', 'node_modules']);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

describe('the tools plan', () => {
  test('tools/ has its TypeScript files to check', () => {
    expect(files.length).toBeGreaterThan(50);
  });

  test(`no file in tools/ is over ${MAX_LINES} lines`, () => {
    expect(overLong(files, MAX_LINES, ROOT)).toEqual([]);
  });

  test('no import cycles between files of tools/', () => {
    expect(cyclesOf(graph, ROOT)).toEqual([]);
  });
});
