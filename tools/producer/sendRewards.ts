import { azureHubSink, type EventSink } from './eventSinks';
import { buildRewardsPlan, expectedBalances, type PlannedEvent } from './rewardEvents';
import { parseRewardsArgs, requireTarget, REWARDS_USAGE, type RewardsProducerOptions } from './rewardsArgs';

/**
 * `npm run send -- --kind rewards`: prints (`--dry-run`) or sends the planned events to `sinkOf`'s hub, then the
 * balance every customer must end with. @throws UsageError for bad options, or no hub without `--dry-run`.
 */
export async function sendRewards(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  runId: string,
  print: (line: string) => void,
  sinkOf: (options: RewardsProducerOptions) => EventSink = (o) => azureHubSink(requireTarget(o)),
): Promise<number> {
  const options = parseRewardsArgs(argv, env, runId);
  if (options === 'help') {
    print(REWARDS_USAGE);
    return 0;
  }
  const plan = buildRewardsPlan(options);
  const sink = options.dryRun ? undefined : sinkOf(options);
  if (!sink) {
    for (const event of plan)
      print(
        JSON.stringify({ hub: options.hub, partitionKey: event.partitionKey, properties: event.properties, body: event.body, sendReason: event.sendReason }),
      );
    print(`dry run: ${plan.length} events for hub ${options.hub}, run ${runId}; nothing sent`);
  } else {
    try {
      for (const event of plan) await sink.send(event);
    } finally {
      await sink.close();
    }
    print(`sent ${plan.length} events (${retriesOf(plan)} producer retries) to ${sink.description}, run ${runId}`);
  }
  for (const [customerId, points] of [...expectedBalances(plan)].sort(([a], [b]) => a.localeCompare(b)))
    print(`expected balance ${customerId}: ${points} points`);
  return 0;
}

function retriesOf(plan: readonly PlannedEvent[]): number {
  return plan.filter((e) => e.sendReason === 'retry').length;
}
