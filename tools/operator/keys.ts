import { runOperatorCli, type OperatorCliIo } from 'azure-functions-idempotency/operator';
import { DEFAULT_DURABLE_URL } from './paymentsRetry';
import { durableHttpStatus, paymentsExtension, type RunStatusOf } from './paymentsKeys';

export const APP_USAGE = `npm run keys -- <command>: the package's console (npx azure-functions-idempotency) with what the app adds for
payments: the charge run's status and the Payment row on show, failed and held payments read as such, a release refused
while the charge run is going. Its own options (the rest is the package's, below):

  --durable-url <url>  the Durable extension's HTTP API: locally http://127.0.0.1:17071/durabletask/ (default), in Azure
                       https://<app>.azurewebsites.net/runtime/webhooks/durabletask/
  --durable-key <key>  Azure: the app's durabletask_extension system key (az functionapp keys list)
  --skip-run-check     do not read the charge run (no Durable endpoint reachable): release and evict no longer see it
`;

/**
 * `npm run keys -- ...`: the package's console with the payments extension. Takes out its own options
 * (`--durable-url`, `--durable-key`, `--skip-run-check`) and runs the rest. `runStatusOf` replaces the Durable HTTP
 * API (tests). Returns the exit code.
 */
export async function runAppKeys(argv: readonly string[], io: OperatorCliIo = {}, runStatusOf?: RunStatusOf): Promise<number> {
  const rest: string[] = [];
  let durableUrl = DEFAULT_DURABLE_URL;
  let durableKey: string | undefined;
  let skipRunCheck = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === '--durable-url' || arg === '--durable-key') {
      const value = argv[++i];
      if (value === undefined) {
        (io.err ?? console.error)(`error: ${arg} needs a value`);
        return 2;
      }
      if (arg === '--durable-url') durableUrl = value;
      else durableKey = value;
    } else if (arg === '--skip-run-check') skipRunCheck = true;
    else rest.push(arg);
  }
  if (rest.includes('--help') || rest.includes('-h') || rest.length === 0) (io.out ?? console.log)(APP_USAGE);
  const extension = paymentsExtension(runStatusOf ?? durableHttpStatus(durableUrl, durableKey), { skipRunCheck });
  return runOperatorCli(rest, { ...io, extensions: [extension, ...(io.extensions ?? [])] });
}

if (require.main === module)
  void runAppKeys(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
