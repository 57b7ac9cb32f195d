/** A pause of a process's event loop: when it began (epoch ms) and how long it lasted (ms). */
export interface Stall {
  readonly atMs: number;
  readonly ms: number;
}

/** Pauses shorter than this are not kept. */
export const STALL_MS = 200;
const TICK_MS = 20;
const PREFIX = 'STALL ';

/**
 * JavaScript for `node -e`: writes `STALL <atMs> <ms>` to stderr for each pause of the process's event loop of
 * {@link STALL_MS} or more (a 20 ms timer that fired that much late); the timer does not keep the process alive.
 */
export const STALL_WATCH_SOURCE =
  `(() => { let last = Date.now(); setInterval(() => { const now = Date.now(); const gap = now - last - ${TICK_MS}; ` +
  `if (gap >= ${STALL_MS}) process.stderr.write('${PREFIX}' + (last + ${TICK_MS}) + ' ' + gap + '\\n'); last = now; }, ${TICK_MS}).unref(); })();`;

/**
 * The stalls of one process: fed from a child's stderr ({@link take}, for a child started with
 * {@link STALL_WATCH_SOURCE}) or by {@link watchStalls} in this process; the last `limit` are kept.
 */
export class StallLog {
  private readonly kept: Stall[] = [];
  private partial = '';

  constructor(private readonly limit = 200) {}

  add(stall: Stall): void {
    this.kept.push(stall);
    if (this.kept.length > this.limit) this.kept.shift();
  }

  /** Takes a chunk of the child's stderr: keeps its stall lines, returns the rest of its text. */
  take(chunk: string): string {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop() ?? '';
    if (!PREFIX.startsWith(this.partial) && !this.partial.startsWith(PREFIX)) {
      lines.push(this.partial); // not the start of a stall line: pass it on now
      this.partial = '';
    }
    const other: string[] = [];
    for (const line of lines.filter((l) => l !== '')) {
      const match = /^STALL (\d+) (\d+)$/.exec(line);
      if (match) this.add({ atMs: Number(match[1]), ms: Number(match[2]) });
      else other.push(line);
    }
    return other.length > 0 ? `${other.join('\n')}\n` : '';
  }

  /** The stalls that began at or after `sinceMs` (epoch), oldest first. */
  since(sinceMs: number): Stall[] {
    return this.kept.filter((s) => s.atMs >= sinceMs);
  }
}

/** Watches this process's event loop into `log` (as {@link STALL_WATCH_SOURCE} does in a child); returns the stop. */
export function watchStalls(log: StallLog): () => void {
  let last = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    const gap = now - last - TICK_MS;
    if (gap >= STALL_MS) log.add({ atMs: last + TICK_MS, ms: gap });
    last = now;
  }, TICK_MS);
  timer.unref();
  return () => clearInterval(timer);
}
