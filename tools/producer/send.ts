import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultAzureCredential } from '@azure/identity';
import { ServiceBusClient, type ServiceBusSender } from '@azure/service-bus';
import { runTool } from '../cli/commandLine';
import { parseProducerArgs, USAGE, type ProducerConnection } from './args';
import { buildSendPlan, toServiceBusMessage, type PlannedMessage } from './messages';
import { shardOf, shardQueue } from '../../src/payments/shards';
import { sendRewards } from './sendRewards';
import { wantsRewards } from './rewardsArgs';

/** `npm run send`: payments or orders to Service Bus, with duplicates and reused keys; the decisions live in args.ts and messages.ts. */

function createClient(connection: Exclude<ProducerConnection, { kind: 'none' }>): ServiceBusClient {
  return connection.kind === 'identity'
    ? new ServiceBusClient(connection.fullyQualifiedNamespace, new DefaultAzureCredential())
    : new ServiceBusClient(connection.connectionString);
}

async function sendRound(sender: ServiceBusSender, messages: readonly PlannedMessage[]): Promise<void> {
  let batch = await sender.createMessageBatch();
  for (const planned of messages) {
    const message = toServiceBusMessage(planned);
    if (batch.tryAddMessage(message)) continue;
    if (batch.count === 0) throw new Error(`message ${planned.messageId} is larger than a batch allows`);
    await sender.sendMessages(batch);
    batch = await sender.createMessageBatch();
    if (!batch.tryAddMessage(message)) throw new Error(`message ${planned.messageId} is larger than a batch allows`);
  }
  if (batch.count > 0) await sender.sendMessages(batch);
}

/** The queue, or the N shards' queues by their base. */
function describeQueues(layout: { count: number; baseQueue: string }): string {
  return layout.count === 1 ? `queue ${layout.baseQueue}` : `${layout.count} shard queues ${layout.baseQueue}-0..${layout.count - 1}`;
}

async function main(argv: readonly string[]): Promise<number> {
  const runId = randomUUID().slice(0, 8);
  if (wantsRewards(argv)) return sendRewards(argv, process.env, runId, (line) => console.log(line));
  const options = parseProducerArgs(argv, process.env, runId);
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  const plan = buildSendPlan(options);
  // Payments over N task hubs: each to the queue of the shard that owns its id (one shard: --queue itself).
  const layout = { count: options.kind === 'payments' ? options.shards : 1, baseQueue: options.queue };
  const queueOf = (planned: PlannedMessage) => shardQueue(layout, shardOf(planned.messageId, layout.count));
  if (options.dryRun || options.connection.kind === 'none') {
    for (const planned of plan) console.log(JSON.stringify({ queue: queueOf(planned), ...toServiceBusMessage(planned), round: planned.round }));
    console.log(`dry run: ${plan.length} messages for ${describeQueues(layout)}, run ${runId}; nothing sent`);
    return 0;
  }

  const client = createClient(options.connection);
  const senders = new Map<string, ServiceBusSender>();
  const senderOf = (queue: string) => senders.get(queue) ?? senders.set(queue, client.createSender(queue)).get(queue)!;
  try {
    const rounds = [...new Set(plan.map((m) => m.round))].sort((a, b) => a - b);
    for (const round of rounds) {
      if (round > 0 && options.resendDelaySeconds > 0) {
        console.log(`waiting ${options.resendDelaySeconds}s before round ${round}`);
        await sleep(options.resendDelaySeconds * 1000);
      }
      const messages = plan.filter((m) => m.round === round);
      for (const queue of new Set(messages.map(queueOf)))
        await sendRound(
          senderOf(queue),
          messages.filter((m) => queueOf(m) === queue),
        );
      console.log(`round ${round}: sent ${messages.length} (${messages[0].applicationProperties.sendReason}) to ${describeQueues(layout)}`);
    }
    console.log(`sent ${plan.length} messages, run ${runId} (correlationId)`);
    return 0;
  } finally {
    for (const sender of senders.values()) await sender.close();
    await client.close();
  }
}

if (require.main === module) runTool('npm run send', () => main(process.argv.slice(2)));
