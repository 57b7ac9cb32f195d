#!/usr/bin/env node
/**
 * The package's `bin`: `npx azure-functions-idempotency keys show|list|release|evict ...`, `dlq replay ...`
 * (`--help` for the usage). Exit codes: `ExitCode` in `usage.ts`.
 */
import { runOperatorCli } from './runOperatorCli';

void runOperatorCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
