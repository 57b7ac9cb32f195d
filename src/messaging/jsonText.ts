/**
 * Deepest nesting under which a delivered value is serialised by `JSON.stringify` itself (which recurses: a body
 * of thousands of nested arrays overflows its stack). Deeper values are written by {@link jsonText}'s own loop.
 */
export const MAX_RECURSIVE_JSON_DEPTH = 200;

/**
 * The nesting depth of a value (a scalar is 0, `[]` is 1, `[[1]]` is 2), walked with an explicit stack so that no
 * shape can overflow the call stack; it stops counting past `limit` (and answers `limit + 1`).
 */
export function jsonDepth(value: unknown, limit: number = MAX_RECURSIVE_JSON_DEPTH): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null || ArrayBuffer.isView(node)) continue;
    const inner = depth + 1;
    if (inner > deepest) deepest = inner;
    if (deepest > limit) return limit + 1;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, inner]);
  }
  return deepest;
}

/**
 * The JSON text of a delivered value (a parsed JSON body): `JSON.stringify` when its depth is at most
 * {@link MAX_RECURSIVE_JSON_DEPTH}; deeper, the same text written by a loop (plain arrays, objects and scalars, as
 * `JSON.parse` makes them; other objects are written by their own enumerable fields), so no body can overflow the
 * stack. Never throws for a tree (a cycle is not JSON and cannot come from a parsed body: it is written `null`).
 */
export function jsonText(value: unknown): string {
  if (jsonDepth(value) <= MAX_RECURSIVE_JSON_DEPTH) return JSON.stringify(value) ?? '';
  const out: string[] = [];
  type Frame = { readonly node: object; readonly entries: Array<[string | undefined, unknown]>; next: number };
  const open = new Set<object>();
  const frames: Frame[] = [];
  const write = (key: string | undefined, v: unknown, inArray: boolean): void => {
    if (key !== undefined) out.push(`${JSON.stringify(key)}:`);
    if (typeof v === 'object' && v !== null && !ArrayBuffer.isView(v) && !open.has(v)) {
      const isArray = Array.isArray(v);
      out.push(isArray ? '[' : '{');
      const entries: Array<[string | undefined, unknown]> = isArray
        ? (v as unknown[]).map((item) => [undefined, item])
        : Object.entries(v).filter(([, item]) => item !== undefined && typeof item !== 'function' && typeof item !== 'symbol');
      open.add(v);
      frames.push({ node: v, entries, next: 0 });
      return;
    }
    const scalar = typeof v === 'object' && v !== null && open.has(v) ? null : v;
    const text = JSON.stringify(scalar);
    out.push(text === undefined ? (inArray ? 'null' : '') : text);
  };
  write(undefined, value, false);
  while (frames.length > 0) {
    const frame = frames[frames.length - 1];
    const isArray = Array.isArray(frame.node);
    if (frame.next >= frame.entries.length) {
      out.push(isArray ? ']' : '}');
      open.delete(frame.node);
      frames.pop();
      continue;
    }
    if (frame.next > 0) out.push(',');
    const [key, item] = frame.entries[frame.next++];
    write(key, item, isArray);
  }
  return out.join('');
}
