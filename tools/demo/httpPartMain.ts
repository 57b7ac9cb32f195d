import { formatHttpPart, runHttpPart } from './httpPart';

/** The HTTP part alone (`node dist/tools/demo/httpPartMain.js [seed]`): the same lines `npm run demo` prints. */
runHttpPart({ seed: Number(process.argv[2] ?? 7) }).then(
  (report) => {
    console.log(formatHttpPart(report));
    process.exitCode = report.ok ? 0 : 1;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 1;
  },
);
