import { ConfigurationError, IdempotencyError, InvalidKeyError, StoreRequestError } from '../../protocol/errors';
import { connectRecords, type ConnectedRecords } from '../connect/connectRecords';
import { OperatorPermissionError, OperatorRefusal, OperatorRefusedError, OperatorUsageError, withRoleHint } from '../operatorErrors';
import { parseCommandLine, type CommandLine } from './cliArgs';
import { connectionOf, type OperatorCliIo } from './cliContext';
import { replayCommand } from './dlqCommand';
import { evictCommand, listCommand, releaseCommand, showCommand, type CommandContext } from './keysCommands';
import { explainUnreachable } from './unreachableStore';
import { ExitCode, USAGE } from './usage';

const COMMANDS: Readonly<Record<string, (line: CommandLine, context: CommandContext) => Promise<number>>> = {
  'keys show': showCommand,
  'keys list': listCommand,
  'keys release': releaseCommand,
  'keys evict': evictCommand,
  'dlq replay': replayCommand,
};

/**
 * The operator's console (`npx azure-functions-idempotency keys ...`, `dlq replay ...`): parses `argv`, connects to the
 * store the options or the environment name, runs the command and returns its exit code ({@link ExitCode}); it never
 * throws. An app adds what it knows of its consumers through `io.extensions` (its own tool calls this function).
 *
 * @example
 * ```ts
 * process.exitCode = await runOperatorCli(process.argv.slice(2), { extensions: [paymentsExtension] });
 * ```
 */
export async function runOperatorCli(argv: readonly string[], io: OperatorCliIo = {}): Promise<number> {
  const env = io.env ?? process.env;
  const out = io.out ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const err = io.err ?? ((line: string) => void process.stderr.write(`${line}\n`));
  let connected: ConnectedRecords | undefined;
  try {
    const line = parseCommandLine(argv);
    if (line === 'help') {
      out(USAGE);
      return ExitCode.Ok;
    }
    const connection = connectionOf(line.values, env);
    connected = await (io.connect ?? connectRecords)(connection);
    return await COMMANDS[line.command](line, { backend: connected.backend, target: connected.target, out, err, env, io });
  } catch (error) {
    const shown = connected ? withRoleHint(explainUnreachable(error, connected), connected.backend.roles, 'write', 'a request') : error;
    if (shown instanceof OperatorPermissionError) io.onPermission?.(shown);
    err(`error: ${messageOf(shown)}`);
    return exitCodeOf(shown);
  } finally {
    connected?.close();
  }
}

/** The exit code of a failure (see {@link ExitCode}). */
export function exitCodeOf(error: unknown): number {
  if (error instanceof OperatorUsageError || error instanceof InvalidKeyError || error instanceof ConfigurationError) return ExitCode.Usage;
  if (error instanceof OperatorRefusedError)
    return error.reason === OperatorRefusal.NotFound || error.reason === OperatorRefusal.UnknownConsumer ? ExitCode.NotFound : ExitCode.Refused;
  if (error instanceof OperatorPermissionError || isBrokerUnauthorized(error)) return ExitCode.Permission;
  return ExitCode.Failed;
}

function messageOf(error: unknown): string {
  if (error instanceof OperatorUsageError || error instanceof InvalidKeyError || error instanceof ConfigurationError)
    return `${error.message} (usage: azure-functions-idempotency --help)`;
  if (isBrokerUnauthorized(error))
    return `Service Bus refused your identity: it needs "Azure Service Bus Data Owner" (or Data Receiver and Data Sender) on the queue (${(error as Error).message})`;
  if (error instanceof StoreRequestError || error instanceof IdempotencyError) return error.message;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** A Service Bus SDK refusal of the identity (`ServiceBusError` code `UnauthorizedAccess`). */
function isBrokerUnauthorized(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === 'UnauthorizedAccess';
}
