import { DEFAULT_CHAOS_OPTIONS, runChaos } from './chaos';
import { USAGE_EXIT_CODE, usageErrorLine, UsageError } from '../cli/commandLine';
import { DEMO_USAGE, parseDemoArgs } from './args';
import { formatProgress, formatReport, reportJson } from './report';
import { formatHttpPart, runHttpPart } from './httpPart';

/**
 * `npm run demo`: the app's main job, locally. Starts Azurite (in memory, loopback, free port),
 * the fake payment provider (unless PAYMENT_PROVIDER_URL names one on loopback), the Cosmos
 * emulator (in process, loopback) and a local Service Bus; sends a seeded workload with
 * duplicates, malformed messages, reused keys and declines through the real payments handler, and
 * orders with shuffled, repeated status versions through the real orders handler, with crashes,
 * provider faults and storage outages injected; prints progress (stderr) and a table (stdout); `--json` adds one JSON line last.
 * Exits 1 when an invariant fails, 2 on a usage error.
 */
async function main(): Promise<number> {
  let args;
  try {
    args = parseDemoArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(usageErrorLine(error, 'npm run demo'));
    return USAGE_EXIT_CODE;
  }
  if (args.help) {
    console.log(DEMO_USAGE);
    return 0;
  }
  const report = await runChaos({ ...args.chaos, onProgress: (p) => console.error(formatProgress(p)) });
  console.log(formatReport(report));
  const http = await runHttpPart({ seed: args.chaos.seed ?? DEFAULT_CHAOS_OPTIONS.seed });
  console.log(formatHttpPart(http));
  if (args.json) console.log(reportJson(report));
  return report.ok && http.ok ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 1;
  },
);
