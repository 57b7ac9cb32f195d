import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: (() => void) | undefined;

/**
 * A full garbage collection now, outside a measured window: the next block of messages starts on a settled heap and
 * pays for the young-generation collections its own garbage causes, not for a major collection of garbage an earlier
 * block left (which lands on whichever block happens to cross the threshold: tens of ms, the main noise of per-block
 * CPU figures). Exposes V8's `gc` at first use, without a command-line flag.
 */
export function settleHeap(): void {
  if (collect === undefined) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}
