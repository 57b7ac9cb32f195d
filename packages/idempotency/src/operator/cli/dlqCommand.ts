import { OperatorUsageError } from '../operatorErrors';
import { replayDeadLetters } from '../replay/replayDeadLetters';
import { serviceBusDeadLetterQueue } from '../replay/serviceBusDeadLetterQueue';
import { duration, integer, positionals, text, type CommandLine } from './cliArgs';
import { whoOf } from './cliContext';
import type { CommandContext } from './keysCommands';
import { replayLine, replaySummary } from './printRecords';
import { ExitCode } from './usage';

/** `dlq replay <queue> --consumer <name>`: each message's outcome on a line, then the counts. */
export async function replayCommand(line: CommandLine, context: CommandContext): Promise<number> {
  const [queueName] = positionals(line, ['queue']);
  const { values } = line;
  const consumer = text(values, 'consumer');
  if (!consumer) throw new OperatorUsageError('dlq replay needs --consumer <name>: the consumer whose records the messages are keyed in');
  const windowText = text(values, 'duplicate-window');
  const options = {
    ...context.io,
    consumer,
    by: whoOf(values, context.env),
    reason: text(values, 'reason'),
    dryRun: values['dry-run'] === true,
    maxMessages: integer('max-messages', text(values, 'max-messages'), { min: 1, max: 100_000, default: 1000 }),
    duplicateWindowMs: windowText === undefined ? undefined : duration('duplicate-window', windowText),
  };
  const open =
    context.io.openDeadLetterQueue ??
    ((name: string) =>
      serviceBusDeadLetterQueue({
        queueName: name,
        connectionString: text(values, 'servicebus-connection-string', context.env.SERVICEBUS_CONNECTION_STRING),
        fullyQualifiedNamespace: text(values, 'servicebus-namespace', context.env.SERVICEBUS_FULLY_QUALIFIED_NAMESPACE),
        managedIdentityClientId: text(values, 'client-id', context.env.AZURE_CLIENT_ID),
      }));
  const queue = await open(queueName);
  try {
    const json = values.json === true;
    const report = await replayDeadLetters(queue, context.backend, {
      ...options,
      onMessage: json ? undefined : (message) => context.out(replayLine(message)),
      onAudit: (entry) => context.err(`audit ${JSON.stringify(entry)}`),
    });
    context.out(json ? JSON.stringify(report, null, 2) : replaySummary(report));
  } finally {
    await queue.close();
  }
  return ExitCode.Ok;
}
