/**
 * Just enough Bicep reading for the infra cross-check test, for what the compiled ARM JSON does not keep
 * (comments, parameter defaults as written). Works on text: strings and comments are blanked out before braces are counted,
 * so `'${a}'` or `// {` never unbalance a block.
 */

/**
 * Returns `text` with the contents of comments and string literals replaced by spaces (same length, same
 * line breaks), so structural characters inside them are ignored. Quotes themselves are kept.
 */
export function blankStringsAndComments(text: string): string {
  const out = text.split('');
  let i = 0;
  const blank = (from: number, to: number): void => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  while (i < text.length) {
    if (text.startsWith("'''", i)) {
      const end = text.indexOf("'''", i + 3);
      const stop = end === -1 ? text.length : end;
      blank(i + 3, stop);
      i = stop + 3;
    } else if (text[i] === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== "'") j += text[j] === '\\' ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
    } else if (text.startsWith('//', i)) {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      blank(i, stop);
      i = stop;
    } else if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      blank(i, stop);
      i = stop;
    } else {
      i++;
    }
  }
  return out.join('');
}

/**
 * The text of the `{ ... }` object that follows the first match of `opener` (which must end just before or
 * at the opening brace), braces included.
 * @throws Error when `opener` is not found or the braces do not balance.
 */
export function objectBlockAfter(text: string, opener: RegExp): string {
  const blanked = blankStringsAndComments(text);
  const match = opener.exec(blanked);
  if (!match) throw new Error(`no match for ${opener}`);
  const start = blanked.indexOf('{', match.index + match[0].length - 1);
  if (start === -1) throw new Error(`no "{" after ${opener}`);
  let depth = 0;
  for (let i = start; i < blanked.length; i++) {
    if (blanked[i] === '{') depth++;
    else if (blanked[i] === '}' && --depth === 0) return text.slice(start, i + 1);
  }
  throw new Error(`unbalanced braces after ${opener}`);
}

/**
 * Property names written directly inside an object block (depth 1), in order: `name: value` lines of the
 * block returned by {@link objectBlockAfter}. Quoted keys (`'a-b': x`) are returned unquoted.
 */
export function topLevelKeys(block: string): string[] {
  const lines = block.split('\n');
  const blankedLines = blankStringsAndComments(block).split('\n');
  const keys: string[] = [];
  let depth = 0;
  lines.forEach((line, n) => {
    if (depth === 1) {
      const m = /^\s*(?:'([^']+)'|([A-Za-z_][A-Za-z0-9_]*))\s*:/.exec(line);
      if (m) keys.push(m[1] ?? m[2]);
    }
    for (const ch of blankedLines[n]) {
      if (ch === '{' || ch === '[') depth++;
      else if (ch === '}' || ch === ']') depth--;
    }
  });
  return keys;
}

/**
 * Default value of `param <name> <type> = <value>` as written (quotes stripped from strings), or undefined
 * when the parameter has no default.
 */
export function paramDefault(text: string, name: string): string | undefined {
  const m = new RegExp(`^param\\s+${name}\\s+\\w+\\s*=\\s*(.+)$`, 'm').exec(text);
  if (!m) return undefined;
  const raw = m[1].trim();
  return raw.startsWith("'") && raw.endsWith("'") ? raw.slice(1, -1) : raw;
}
