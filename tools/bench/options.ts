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
}

export const DEFAULT_BENCH_OPTIONS: BenchOptions = { messages: 500, concurrency: 16, rounds: 7, json: false };

const USAGE = 'usage: npm run bench -- [--messages N] [--concurrency N] [--rounds N] [--json]';

/** @throws Error naming the bad option (and the usage line) on anything it does not understand. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  let options: BenchOptions = DEFAULT_BENCH_OPTIONS;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [name, inline] = arg.split('=', 2) as [string, string | undefined];
    const value = (): number => {
      const raw = inline ?? argv[++i];
      const n = Number(raw);
      if (raw === undefined || !Number.isInteger(n) || n < 1) throw new Error(`${name} needs a positive integer, got ${JSON.stringify(raw)}\n${USAGE}`);
      return n;
    };
    switch (name) {
      case '--messages':
        options = { ...options, messages: value() };
        break;
      case '--concurrency':
        options = { ...options, concurrency: value() };
        break;
      case '--rounds':
        options = { ...options, rounds: value() };
        break;
      case '--json':
        options = { ...options, json: true };
        break;
      case '--help':
      case '-h':
        throw new Error(USAGE);
      default:
        throw new Error(`unknown option ${JSON.stringify(arg)}\n${USAGE}`);
    }
  }
  return options;
}
