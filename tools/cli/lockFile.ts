/** Machine-wide lock files: created exclusively with the owner's pid; a dead owner's lock is taken over. */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';

/** Runs `fn` holding an exclusive lock file (another process's lock is waited for; a dead owner's is taken). */
export function withFileLock<T>(file: string, fn: () => T): T {
  acquireLockSync(file);
  try {
    return fn();
  } finally {
    unlinkSync(file);
  }
}

/**
 * One try at the lock file: created exclusively with this process's pid written through the same descriptor.
 * Returns false while a live owner holds it; a dead owner's file is removed (the caller tries again at once).
 */
function tryTakeLock(file: string): boolean | 'retry' {
  try {
    const fd = openSync(file, 'wx');
    try {
      writeSync(fd, String(process.pid));
    } finally {
      closeSync(fd);
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    if (ownerAlive(file)) return false;
    try {
      unlinkSync(file);
    } catch {
      /* another waiter took it */
    }
    return 'retry';
  }
}

function acquireLockSync(file: string): void {
  for (;;) {
    const taken = tryTakeLock(file);
    if (taken === true) return;
    if (taken === false) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
  }
}

function ownerAlive(file: string): boolean {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return true; // removed meanwhile: the next try decides
  }
  if (text === '') return true; // just created, its pid not written yet
  const pid = Number(text);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (polling every 0.5 s) until this process holds the lock `file`. */
export async function acquirePortLock(file: string): Promise<void> {
  for (;;) {
    const taken = tryTakeLock(file);
    if (taken === true) return;
    if (taken === false) await new Promise((r) => setTimeout(r, 500));
  }
}
