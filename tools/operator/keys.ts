import { runOperatorCli, type OperatorCliIo } from 'azure-functions-idempotency/operator';
import { DEFAULT_DURABLE_URL } from './paymentsRetry';
import { positionalsOf, shardChoiceOf } from './keysShard';
import { durableHttpStatus, paymentsExtension, type RunStatusOf } from './paymentsKeys';
import { LEDGER_USAGE, ledgerLinesFor, ledgerTableOf, runLedgerCommand } from './ledgerCommand';

export const APP_USAGE = `npm run keys -- <command>: the package's console (npx azure-functions-idempotency) with what the app adds for
payments: the charge run's status and the Payment row on show, failed and held payments read as such, a release refused
while the charge run is going. Its own options (the rest is the package's, below):

  --durable-url <url>  the Durable extension's HTTP API: locally http://127.0.0.1:17071/durabletask/ (default), in Azure
                       https://<app>.azurewebsites.net/runtime/webhooks/durabletask/
  --durable-key <key>  Azure: the app's durabletask_extension system key (az functionapp keys list)
  --skip-run-check     do not read the charge run (no Durable endpoint reachable): release and evict no longer see it
  --shard <i>          sharded (PAYMENT_SHARD_COUNT > 1): read shard i's table. Without it a command on one payment
                       (keys show|release|evict payments|http-payments-accepted <paymentId>) goes to the payment's owner
                       and dlq replay <base>-<i> to shard i; the rest to the settings' own shard. Another shard's table is
                       reached through PAYMENT_SHARD_TABLE_ENDPOINTS; its charge runs through its app's --durable-url
                       (given explicitly, or --skip-run-check)

The ledger check's discrepancies (charges the provider made that no record holds as succeeded with that charge;
keys show payments <paymentId> also prints the key's):
${LEDGER_USAGE}
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
  let durableUrlGiven = false;
  let shardOption: string | undefined;
  let skipRunCheck = false;
  const err = io.err ?? console.error;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === '--durable-url' || arg === '--durable-key' || arg === '--shard') {
      const value = argv[++i];
      if (value === undefined) {
        err(`error: ${arg} needs a value`);
        return 2;
      }
      if (arg === '--durable-url') [durableUrl, durableUrlGiven] = [value, true];
      else if (arg === '--durable-key') durableKey = value;
      else shardOption = value;
    } else if (arg === '--skip-run-check') skipRunCheck = true;
    else rest.push(arg);
  }
  if (rest.includes('--help') || rest.includes('-h') || rest.length === 0) (io.out ?? console.log)(APP_USAGE);
  // Sharded: the table of the shard the command is about (the payment's owner, --shard, or the settings' own).
  const choice = shardChoiceOf(rest, io.env ?? process.env, shardOption);
  if (choice.kind === 'refused') {
    err(`error: ${choice.message}`);
    return 2;
  }
  if (choice.kind === 'shard') {
    err(choice.note);
    // Another shard's charge runs are in its task hub: the local default would read this shard's and see none.
    if (choice.remote && !skipRunCheck && !durableUrlGiven && !runStatusOf) {
      err(
        `error: shard ${choice.shard}'s charge runs are read at its app: pass --durable-url (and --durable-key) of shard ${choice.shard}'s app, or --skip-run-check`,
      );
      return 2;
    }
  }
  const env = choice.kind === 'shard' ? choice.env : io.env;
  const out = io.out ?? console.log;
  const positionals = positionalsOf(rest);
  if (positionals[0] === 'ledger') return runLedgerCommand(rest, env ?? process.env, { out, err });
  const extension = paymentsExtension(runStatusOf ?? durableHttpStatus(durableUrl, durableKey), { skipRunCheck });
  const code = await runOperatorCli(rest, { ...io, ...(env ? { env } : {}), extensions: [extension, ...(io.extensions ?? [])] });
  // `keys show payments <id>`: the key's ledger discrepancies too (a charge with no record has nothing else to show).
  const [group, command, consumer, paymentId] = positionals;
  if (group === 'keys' && command === 'show' && consumer === 'payments' && paymentId && !rest.includes('--json'))
    for (const line of await ledgerLinesFor(ledgerTableOf(rest, env ?? process.env), paymentId)) out(line);
  return code;
}

if (require.main === module)
  void runAppKeys(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
