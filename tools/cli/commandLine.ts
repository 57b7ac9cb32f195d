import { parseArgs } from 'node:util';

/**
 * The one command-line parser of the tools (docs/development.md): `node:util` `parseArgs` (strict, no positionals)
 * and option readers that word every problem alike; `--help` prints the usage and exits 0, a {@link UsageError}
 * prints one line on stderr and exits 2 ({@link runTool}).
 */

/** Exit code of a bad command line. */
export const USAGE_EXIT_CODE = 2;

/** A bad command line (or environment); the message names the option and what it must be. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Option kinds as `parseArgs` knows them. */
export type OptionSpecs = Record<string, { readonly type: 'string' | 'boolean'; readonly short?: string }>;
export type OptionValues = Readonly<Record<string, string | boolean | undefined>>;

/**
 * Parses `argv` (without node and script) against `specs`. `--help` and `-h` are always known.
 * A negative number after a string option (`--count -1`) is read as its value, so it meets the
 * option's own rule instead of an "ambiguous argument" error.
 * @returns `'help'` when `--help` or `-h` is present (even beside a bad option), otherwise the raw values.
 * @throws UsageError for an unknown option, a missing value, a value given to a flag, a positional argument.
 */
export function parseCommandLine(argv: readonly string[], specs: OptionSpecs): OptionValues | 'help' {
  const options = { ...specs, help: { type: 'boolean', short: 'h' } } as const;
  let values: OptionValues;
  try {
    ({ values } = parseArgs({ args: joinNegativeValues(argv, specs), options, strict: true, allowPositionals: false }));
  } catch (error) {
    // `--help` answers even beside a mistake: the usage is what the user needs then.
    if (argv.includes('--help') || argv.includes('-h')) return 'help';
    throw new UsageError(describeParseError(error as Error & { code?: string }));
  }
  return values.help === true ? 'help' : values;
}

/** `['--count', '-1']` -> `['--count=-1']` for string options, so parseArgs takes the number as the value. */
function joinNegativeValues(argv: readonly string[], specs: OptionSpecs): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const next = argv[i + 1];
    if (arg.startsWith('--') && specs[arg.slice(2)]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/** parseArgs' errors in our wording (its own messages are long and differ by Node version). */
function describeParseError(error: Error & { code?: string }): string {
  const option = /'(-{1,2}[^' ]+)/.exec(error.message)?.[1];
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option ?? error.message}`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${/'([^']*)'/.exec(error.message)?.[1] ?? error.message}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (/does not take an argument/.test(error.message)) return `${option} takes no value`;
      return `${option} needs a value`;
    default:
      return error.message;
  }
}

/** Bounds of a number option; `default` when it is absent. */
export interface NumberRule {
  readonly min: number;
  readonly max: number;
  readonly default: number;
}

/**
 * Reads typed options from parsed values, collecting every problem; {@link OptionReader.done} throws
 * them together (one line, `; ` between them).
 */
export interface OptionReader {
  /** An integer from `min` to `max`: `--x must be an integer from 1 to 100000, got "x"`. */
  integer(name: string, rule: NumberRule): number;
  /** A finite number from `min` to `max`: `--x must be a number from 0 to 1, got "x"`. */
  number(name: string, rule: NumberRule): number;
  /** One of `choices`: `--x must be one of a, b, got "x"`. */
  choice<T extends string>(name: string, choices: readonly T[], fallback: T): T;
  /** Text that is not blank, at most `maxLength` characters, optionally matching `pattern` (`what` it must be). */
  text(name: string, rule: { readonly default: string; readonly maxLength?: number; readonly pattern?: RegExp; readonly what?: string }): string;
  /** The raw text, or undefined when absent. */
  optional(name: string): string | undefined;
  /** A boolean flag. */
  flag(name: string): boolean;
  /** Records a problem of its own (a rule across options, e.g. a total). */
  problem(message: string): void;
  /** @throws UsageError naming every problem recorded. */
  done(): void;
}

/** A reader over `values` (from {@link parseCommandLine}). */
export function optionReader(values: OptionValues): OptionReader {
  const problems: string[] = [];
  const raw = (name: string): string | undefined => {
    const value = values[name];
    return typeof value === 'string' ? value : undefined;
  };
  const numeric = (name: string, rule: NumberRule, integer: boolean): number => {
    const text = raw(name);
    if (text === undefined) return rule.default;
    const value = text.trim() === '' ? Number.NaN : Number(text);
    if (!Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < rule.min || value > rule.max) {
      problems.push(`--${name} must be ${integer ? 'an integer' : 'a number'} from ${rule.min} to ${rule.max}, got ${JSON.stringify(text)}`);
      return rule.default;
    }
    return value;
  };
  return {
    integer: (name, rule) => numeric(name, rule, true),
    number: (name, rule) => numeric(name, rule, false),
    choice(name, choices, fallback) {
      const text = raw(name);
      if (text === undefined) return fallback;
      if ((choices as readonly string[]).includes(text)) return text as (typeof choices)[number];
      problems.push(`--${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(text)}`);
      return fallback;
    },
    text(name, rule) {
      const text = raw(name);
      if (text === undefined) return rule.default;
      const maxLength = rule.maxLength ?? 1_000;
      const shown = JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}...` : text);
      if (text.trim() === '' || text.length > maxLength) {
        problems.push(`--${name} must be 1 to ${maxLength} characters, got ${shown}`);
        return rule.default;
      }
      if (rule.pattern && !rule.pattern.test(text)) {
        problems.push(`--${name} must be ${rule.what ?? `text matching ${rule.pattern}`}, got ${shown}`);
        return rule.default;
      }
      return text.trim();
    },
    optional: raw,
    flag: (name) => values[name] === true,
    problem: (message) => void problems.push(message),
    done() {
      if (problems.length > 0) throw new UsageError(problems.join('; '));
    },
  };
}

/** The one line a tool prints on stderr for a usage error: the problem and where the usage is. */
export function usageErrorLine(error: UsageError, command: string): string {
  return `${error.message} (usage: ${command} -- --help)`;
}

/**
 * Runs a tool's `main` and sets the exit code it returns: a {@link UsageError} prints {@link usageErrorLine} and exits
 * 2, any other error prints `<command> failed: <stack>` and exits 1.
 */
export function runTool(command: string, main: () => Promise<number | void>): void {
  main().then(
    (code) => void (code !== undefined && (process.exitCode = code)),
    (error: unknown) => {
      const usage = error instanceof UsageError;
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      process.stderr.write(`${usage ? usageErrorLine(error, command) : `${command} failed: ${text}`}\n`);
      process.exitCode = usage ? USAGE_EXIT_CODE : 1;
    },
  );
}
