import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The README's "Using the core" code is examples/quickstart.ts, which the quickstart test compiles and runs. */
test('the README quickstart is examples/quickstart.ts, character for character', () => {
  const root = join(__dirname, '..', '..');
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Using the core'));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  expect(block).toBe(readFileSync(join(root, 'examples', 'quickstart.ts'), 'utf8'));
});

/** The package's own README (what npm shows) carries the same quickstart. */
test("the core package's README quickstart is examples/quickstart.ts, character for character", () => {
  const root = join(__dirname, '..', '..');
  const readme = readFileSync(join(root, 'packages', 'idempotency', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quickstart'));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  expect(block).toBe(readFileSync(join(root, 'examples', 'quickstart.ts'), 'utf8'));
});
