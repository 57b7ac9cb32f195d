import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One Node range, stated alike everywhere (docs/development.md "Node versions"): the app runs on Node 22 in Azure
 * (root `engines`, the Bicep's runtime version, README), the core package supports Node 20 or later (its
 * `engines`, its README, the root README), and `@types/node` is the lowest Node either supports, so code typed
 * against it runs on every supported version.
 */
const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const json = (path: string) => JSON.parse(read(path)) as { engines: { node: string }; devDependencies?: Record<string, string> };
/** The lowest major of a `>=N` range (the only form used here). */
function lowestMajor(range: string): number {
  const match = /^>=(\d+)$/.exec(range);
  if (!match) throw new Error(`engines.node is not of the form >=N: ${range}`);
  return Number(match[1]);
}

const app = json('package.json');
const core = json('packages/idempotency/package.json');
const appMajor = lowestMajor(app.engines.node);
const coreMajor = lowestMajor(core.engines.node);

describe('one Node range everywhere', () => {
  test('the app: engines, both Bicep runtime versions and the README name the same Node major', () => {
    expect(appMajor).toBe(22);
    expect(/param runtimeVersion string = '(\d+)'/.exec(read('infra/app/api.bicep'))?.[1]).toBe(String(appMajor));
    expect(/runtimeVersion: '(\d+)'/.exec(read('infra/main.bicep'))?.[1]).toBe(String(appMajor));
    expect(/Needs Node (\d+), the app's runtime in Azure/.exec(read('README.md'))?.[1]).toBe(String(appMajor));
    expect(read('docs/development.md')).toContain(`(\`engines: >=${appMajor}\`)`);
  });

  test('the core package: engines and both READMEs name the same lowest Node, no higher than the app', () => {
    expect(coreMajor).toBeLessThanOrEqual(appMajor);
    expect(/needs Node (\d+) or later/.exec(read('README.md'))?.[1]).toBe(String(coreMajor));
    expect(/Node (\d+) or later/.exec(read('packages/idempotency/README.md'))?.[1]).toBe(String(coreMajor));
  });

  test('@types/node is the lowest supported Node (the core), and this Node runs it', () => {
    expect(/^\^?(\d+)\./.exec(app.devDependencies!['@types/node'])?.[1]).toBe(String(coreMajor));
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(coreMajor);
  });
});
