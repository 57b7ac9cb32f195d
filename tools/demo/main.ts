import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { runChaos } from './chaos';
import { DEFAULT_CHAOS_OPTIONS } from './chaosOptions';
import type { ChaosProgress } from './chaosReport';
import { runTool, USAGE_EXIT_CODE } from '../cli/commandLine';
import { installStopSignals } from '../cli/stopSignals';
import { DEMO_USAGE, parseDemoArgs } from './args';
import { htmlReport } from './htmlReport';
import { checkProvider } from './preflight';
import { formatProgress, formatReport, reportJson } from './report';
import { judge } from './verdict';
import { formatHttpPart, runHttpPart } from './httpPart';

/**
 * `npm run demo` (docs/demo.md): the chaos run (`runChaos`), then the HTTP part; progress on stderr (a bar on a
 * terminal, plain lines otherwise), the verdict and the figures on stdout. Options and exit codes: `DEMO_USAGE`.
 */
async function main(): Promise<number | void> {
  const args = parseDemoArgs(process.argv.slice(2));
  if (args.help) return void console.log(DEMO_USAGE);
  if (args.chaos.providerUrl) {
    const problem = await checkProvider(args.chaos.providerUrl);
    if (problem) {
      console.error(problem);
      return USAGE_EXIT_CODE;
    }
  }
  installStopSignals('demo');
  const tty = process.stderr.isTTY === true;
  const samples: ChaosProgress[] = [];
  let lastPrinted = -Infinity;
  const onProgress = (p: ChaosProgress) => {
    samples.push(p);
    if (p.phase) {
      process.stderr.write(`${tty ? '\r\x1b[K' : ''}${formatProgress(p)}\n`);
    } else if (tty) {
      process.stderr.write(`\r\x1b[K${formatProgress(p, { bar: true }).slice(0, Math.max(40, (process.stderr.columns ?? 120) - 1))}`);
    } else if (p.elapsedMs - lastPrinted >= 1_000) {
      lastPrinted = p.elapsedMs;
      process.stderr.write(`${formatProgress(p)}\n`);
    }
  };
  const report = judge(await runChaos({ ...args.chaos, onProgress, progressEveryMs: 250 }));
  if (tty) process.stderr.write('\n');
  console.log(formatReport(report));
  if (args.reportFile) {
    const file = resolve(args.reportFile);
    writeFileSync(file, htmlReport(report, samples));
    console.error(`report written to ${file}`);
  }
  const http = await runHttpPart({ seed: args.chaos.seed ?? DEFAULT_CHAOS_OPTIONS.seed });
  console.log(formatHttpPart(http));
  if (args.json) console.log(reportJson(report));
  return report.ok && http.ok ? 0 : 1;
}

runTool('npm run demo', main);
