import { parseArgs } from 'node:util';
import { OperatorUsageError } from '../operatorErrors';

/** Every option the console knows (each command accepts a subset: {@link COMMAND_OPTIONS}). */
export const OPTION_SPECS = {
  // Where the records are.
  store: { type: 'string' },
  'table-connection-string': { type: 'string' },
  'table-endpoint': { type: 'string' },
  table: { type: 'string' },
  partitions: { type: 'string' },
  'cosmos-endpoint': { type: 'string' },
  'cosmos-key': { type: 'string' },
  'cosmos-database': { type: 'string' },
  'cosmos-container': { type: 'string' },
  'client-id': { type: 'string' },
  'timeout-ms': { type: 'string' },
  // Output and safety.
  json: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  // list
  status: { type: 'string' },
  'older-than': { type: 'string' },
  limit: { type: 'string' },
  'max-pages': { type: 'string' },
  'page-size': { type: 'string' },
  continue: { type: 'string' },
  // release, evict
  reason: { type: 'string' },
  by: { type: 'string' },
  etag: { type: 'string' },
  force: { type: 'boolean' },
  // dlq replay
  consumer: { type: 'string' },
  'max-messages': { type: 'string' },
  'duplicate-window': { type: 'string' },
  'servicebus-connection-string': { type: 'string' },
  'servicebus-namespace': { type: 'string' },
} as const;

export type OptionName = keyof typeof OPTION_SPECS;
export type CliValues = Partial<Record<OptionName, string | boolean>>;

const CONNECTION: readonly OptionName[] = [
  'store',
  'table-connection-string',
  'table-endpoint',
  'table',
  'partitions',
  'cosmos-endpoint',
  'cosmos-key',
  'cosmos-database',
  'cosmos-container',
  'client-id',
  'timeout-ms',
  'json',
  'help',
];

/** The options each command accepts (besides the connection's and `--json`, `--help`). */
export const COMMAND_OPTIONS: Readonly<Record<string, readonly OptionName[]>> = {
  // Reads: `--dry-run` is accepted and changes nothing (they write nothing anyway).
  'keys show': [...CONNECTION, 'dry-run'],
  'keys list': [...CONNECTION, 'dry-run', 'status', 'older-than', 'limit', 'max-pages', 'page-size', 'continue'],
  'keys release': [...CONNECTION, 'reason', 'by', 'etag', 'dry-run'],
  'keys evict': [...CONNECTION, 'reason', 'by', 'etag', 'dry-run', 'force'],
  'dlq replay': [
    ...CONNECTION,
    'consumer',
    'by',
    'reason',
    'dry-run',
    'max-messages',
    'duplicate-window',
    'servicebus-connection-string',
    'servicebus-namespace',
  ],
};

/** A parsed command line: the command (`keys show`), its arguments and options. */
export interface CommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly values: CliValues;
}

/**
 * Parses `argv` (without node and the script). `--help` anywhere answers the usage.
 * @returns `'help'` for `--help`, `-h` or no arguments
 * @throws OperatorUsageError for an unknown command or option, an option the command does not take, a missing value
 */
export function parseCommandLine(argv: readonly string[]): CommandLine | 'help' {
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) return 'help';
  let parsed: { values: CliValues; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: OPTION_SPECS, strict: true, allowPositionals: true });
  } catch (error) {
    throw new OperatorUsageError(describeParseError(error as Error & { code?: string }));
  }
  const [group, verb, ...args] = parsed.positionals;
  const command = `${group ?? ''} ${verb ?? ''}`.trim();
  if (!(command in COMMAND_OPTIONS)) {
    const known = Object.keys(COMMAND_OPTIONS).join(', ');
    throw new OperatorUsageError(group === undefined ? `a command is required: ${known}` : `unknown command ${JSON.stringify(command)}: one of ${known}`);
  }
  const allowed = COMMAND_OPTIONS[command];
  const stray = (Object.keys(parsed.values) as OptionName[]).filter((name) => !allowed.includes(name));
  if (stray.length > 0) throw new OperatorUsageError(`${command} does not take ${stray.map((name) => `--${name}`).join(', ')}`);
  return { command, args, values: parsed.values };
}

/** `expected` positional arguments of `line`, by name, or a usage error naming what is missing or extra. */
export function positionals(line: CommandLine, names: readonly string[]): string[] {
  if (line.args.length < names.length)
    throw new OperatorUsageError(`${line.command} needs ${names.map((n) => `<${n}>`).join(' ')}; missing <${names[line.args.length]}>`);
  if (line.args.length > names.length)
    throw new OperatorUsageError(`${line.command} takes ${names.map((n) => `<${n}>`).join(' ')}; unexpected ${JSON.stringify(line.args[names.length])}`);
  return [...line.args];
}

/** A string option's value, or the environment's (`env`), or undefined. */
export function text(values: CliValues, name: OptionName, env?: string): string | undefined {
  const value = values[name];
  if (typeof value === 'string') return value;
  return env !== undefined && env !== '' ? env : undefined;
}

/** An integer option from `min` to `max` (its default when absent). @throws OperatorUsageError */
export function integer(name: string, value: string | undefined, rule: { readonly min: number; readonly max: number; readonly default: number }): number {
  if (value === undefined) return rule.default;
  const n = value.trim() === '' ? Number.NaN : Number(value);
  if (!Number.isInteger(n) || n < rule.min || n > rule.max)
    throw new OperatorUsageError(`--${name} must be an integer from ${rule.min} to ${rule.max}, got ${JSON.stringify(value)}`);
  return n;
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration as `2h`, `90m`, `1h30m`, `45s`, `7d`, `500ms` or `0`, in ms. @throws OperatorUsageError */
export function duration(name: string, value: string): number {
  const parts = [...value.trim().matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  const whole = parts.map((part) => part[0]).join('');
  if (value.trim() === '0') return 0;
  if (parts.length === 0 || whole !== value.trim())
    throw new OperatorUsageError(`--${name} must be a duration such as 2h, 90m, 1h30m, 45s or 7d, got ${JSON.stringify(value)}`);
  return Math.round(parts.reduce((sum, part) => sum + Number(part[1]) * DURATION_UNITS[part[2]], 0));
}

function describeParseError(error: Error & { code?: string }): string {
  const option = /'(-{1,2}[^' ]+)/.exec(error.message)?.[1];
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option ?? error.message}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /does not take an argument/.test(error.message) ? `${option} takes no value` : `${option} needs a value`;
    default:
      return error.message;
  }
}
