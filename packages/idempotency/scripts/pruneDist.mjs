// prepack: deletes what dist/ holds that no source in src/ builds any more (a removed or renamed module's
// .js and .d.ts), so `npm pack` and `npm publish` ship only the current build. Files the build still writes are
// left in place: nothing that is loading them (the repository's app, its tests) loses a module.
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const src = join(root, 'src');
const OUTPUT = /\.(d\.ts|js)$/;

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      walk(path);
      if (readdirSync(path).length === 0) rmSync(path, { recursive: true });
    } else if (OUTPUT.test(name)) {
      const source = join(src, relative(dist, path).replace(OUTPUT, '.ts'));
      if (!existsSync(source)) {
        rmSync(path);
        process.stdout.write(`pruned ${relative(root, path)} (no ${relative(root, source)})\n`);
      }
    }
  }
}

if (existsSync(dist)) walk(dist);
