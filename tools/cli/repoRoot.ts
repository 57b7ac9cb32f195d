import { existsSync } from 'node:fs';
import path from 'node:path';

/** The repository root: the nearest folder above this file with `host.json` (tools/ compiled into dist/ or not). */
export const REPO_ROOT = (() => {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'host.json'))) {
    if (path.dirname(dir) === dir) throw new Error(`no repository root above ${__dirname}`);
    dir = path.dirname(dir);
  }
  return dir;
})();
