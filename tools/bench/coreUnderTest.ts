import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import * as current from 'azure-functions-idempotency/internal';

/** What the overhead section uses of a build of the core package. */
export interface CoreUnderTest {
  /** How the report names this build: `this` (the working tree's) or `before` (a copy given with `--core-before`). */
  readonly label: string;
  readonly makeIdempotent: typeof current.makeIdempotent;
  readonly TableIdempotencyStore: typeof current.TableIdempotencyStore;
  readonly keyFromMessageId: typeof current.keyFromMessageId;
}

/** The core package this bench was built against (the working tree's `packages/idempotency`). */
export function currentCore(): CoreUnderTest {
  return {
    label: 'this',
    makeIdempotent: current.makeIdempotent,
    TableIdempotencyStore: current.TableIdempotencyStore,
    keyFromMessageId: current.keyFromMessageId,
  };
}

/**
 * Another build of the core package, loaded from `packageDir` (a directory holding its compiled `dist/`, e.g. main's
 * `packages/idempotency` built elsewhere), so two builds run side by side in one process on one Azurite.
 * @throws Error when `packageDir` holds no `dist/internal.js`.
 */
export function coreFrom(packageDir: string, label: string): CoreUnderTest {
  const entry = resolve(packageDir, 'dist', 'internal.js');
  if (!existsSync(entry)) throw new Error(`--core-before: no built core package at ${packageDir} (expected ${entry}; build it with tsc -b)`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require(entry) as typeof current;
  return { label, makeIdempotent: loaded.makeIdempotent, TableIdempotencyStore: loaded.TableIdempotencyStore, keyFromMessageId: loaded.keyFromMessageId };
}
