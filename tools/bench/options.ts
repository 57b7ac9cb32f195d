import { optionReader, parseCommandLine } from '../cli/commandLine';

/** Command-line options of `npm run bench`. */
export interface BenchOptions {
  /** Messages per measurement (round-trip averages, each throughput variant per round). */
  readonly messages: number;
  /** In-flight messages during throughput and latency measurements. */
  readonly concurrency: number;
  /** Measured throughput rounds (after one warm-up round); the median is reported. */
  readonly rounds: number;
  /** Print one JSON object as the last line of stdout instead of a table. */
  readonly json: boolean;
  /** Measure only the wrapper's overhead over raw SDK calls (skips round trips, throughput, sweep and Cosmos). */
  readonly overheadOnly?: boolean;
  /** A second build of the core package (a directory with its `dist/`) measured beside this one in the overhead section. */
  readonly coreBefore?: string;
  /** More builds measured beside this one in the overhead section: `label=DIR` each (e.g. one per change). */
  readonly compare?: readonly { readonly label: string; readonly dir: string }[];
}

export const DEFAULT_BENCH_OPTIONS: BenchOptions = {
  messages: 500,
  concurrency: 16,
  rounds: 7,
  json: false,
  overheadOnly: false,
  coreBefore: undefined,
  compare: [],
};

export const BENCH_USAGE = `usage: npm run bench -- [options]
  --messages N      messages per measurement (default ${DEFAULT_BENCH_OPTIONS.messages}, 1 to 100000)
  --concurrency N   in-flight messages (default ${DEFAULT_BENCH_OPTIONS.concurrency}, 1 to 256)
  --rounds N        measured throughput rounds after one warm-up (default ${DEFAULT_BENCH_OPTIONS.rounds}, 1 to 100)
  --json            print one JSON object as the last line of stdout instead of a table
  --overhead-only   measure only the wrapper's overhead over the same raw SDK calls (client CPU per message)
  --core-before DIR measure another build of the core package beside this one in the overhead section
                    (DIR holds its compiled dist/, e.g. main's packages/idempotency built elsewhere)
  --compare L=DIR,... more builds beside these, each labelled L (e.g. one build per change)
  --help, -h        this text
exit code: 0 whether or not targets are met, 1 when it crashes, 2 on a usage error.`;

/**
 * Parses the bench's command line with the tools' shared parser.
 * @returns `'help'` for --help.
 * @throws UsageError naming every bad option.
 */
export function parseBenchOptions(argv: readonly string[]): BenchOptions | 'help' {
  const values = parseCommandLine(argv, {
    messages: { type: 'string' },
    concurrency: { type: 'string' },
    rounds: { type: 'string' },
    json: { type: 'boolean' },
    'overhead-only': { type: 'boolean' },
    'core-before': { type: 'string' },
    compare: { type: 'string' },
  });
  if (values === 'help') return 'help';
  const read = optionReader(values);
  const options: BenchOptions = {
    messages: read.integer('messages', { min: 1, max: 100_000, default: DEFAULT_BENCH_OPTIONS.messages }),
    concurrency: read.integer('concurrency', { min: 1, max: 256, default: DEFAULT_BENCH_OPTIONS.concurrency }),
    rounds: read.integer('rounds', { min: 1, max: 100, default: DEFAULT_BENCH_OPTIONS.rounds }),
    json: read.flag('json'),
    // The overhead section's options appear only when given (the options of a plain run stay as they were).
    ...(read.flag('overhead-only') ? { overheadOnly: true } : {}),
    ...(values['core-before'] === undefined ? {} : { coreBefore: read.optional('core-before') }),
    ...(values.compare === undefined ? {} : { compare: compareList(read.optional('compare'), (message) => read.problem(message)) }),
  };
  read.done();
  return options;
}

/** `a=dir1,b=dir2` -> labelled directories; a malformed entry or a reserved label is a usage problem. */
function compareList(text: string | undefined, problem: (message: string) => void): { label: string; dir: string }[] {
  if (text === undefined) return [];
  return text.split(',').flatMap((entry) => {
    const match = /^([A-Za-z0-9_-]+)=(.+)$/.exec(entry.trim());
    if (!match || match[1] === 'this' || match[1] === 'before') {
      problem(`--compare takes label=DIR entries (labels other than "this" and "before"), got ${JSON.stringify(entry)}`);
      return [];
    }
    return [{ label: match[1], dir: match[2] }];
  });
}
