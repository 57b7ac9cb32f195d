import { optionReader, parseCommandLine, UsageError, type OptionSpecs } from '../cli/commandLine';
import { namespaceHost } from './args';
import type { AzureHubTarget } from './eventSinks';
import type { CloudEventMode, RewardsPlanOptions } from './rewardEvents';

/** The rewards producer's options: the plan, where to send, and whether to send at all. */
export interface RewardsProducerOptions extends RewardsPlanOptions {
  readonly hub: string;
  /** Undefined: none given (a dry run, or the local hub of a test or the demo). */
  readonly target: AzureHubTarget | undefined;
  readonly dryRun: boolean;
}

export const REWARDS_USAGE = `Usage: npm run send -- --kind rewards [options]

  PaymentSucceeded CloudEvents (source + id = the payment) to the rewards hub, partition key = customer.
  --count <n>                  distinct payments (default 10, at most 100000)
  --customers <n>              customers they are spread over (default 3, at most 10000)
  --retries <n>                send each event n more times, unchanged, right after it (producer retries; default 0, at most 100)
  --retry-share <0-1>          share of the events that get the retries (default 1)
  --mode <structured|binary>   the whole CloudEvent as the body, or cloudEvents:* properties (default structured)
  --seed <n>                   amounts, customers and retried events (default 1: the same seed, the same events)
  --id-prefix <text>           payment ids <prefix>-0001... (default pay-<run>)
  --customer-prefix <text>     customer ids <prefix>-0... (default cust-<run>)
  --source <uri-ref>           CloudEvent source (default /payments)
  --currency <ISO 4217>        default EUR
  --hub <name>                 default REWARDS_EVENT_HUB_NAME or payments-succeeded
  --namespace <host>           e.g. evhns-abc.servicebus.windows.net (or EVENTHUB_FULLY_QUALIFIED_NAMESPACE);
                               authenticates with DefaultAzureCredential (needs Azure Event Hubs Data Sender)
                               EVENTHUB_CONNECTION_STRING (env only, e.g. the Event Hubs emulator) when no namespace
  --dry-run                    print the events as JSON lines and the balances they must give, send nothing
  --help, -h                   this text`;

const SPECS: OptionSpecs = {
  kind: { type: 'string' },
  count: { type: 'string' },
  customers: { type: 'string' },
  retries: { type: 'string' },
  'retry-share': { type: 'string' },
  mode: { type: 'string' },
  seed: { type: 'string' },
  'id-prefix': { type: 'string' },
  'customer-prefix': { type: 'string' },
  source: { type: 'string' },
  currency: { type: 'string' },
  hub: { type: 'string' },
  namespace: { type: 'string' },
  'dry-run': { type: 'boolean' },
};

/** True when argv asks for `--kind rewards` (the Service Bus kinds have their own options, args.ts). */
export function wantsRewards(argv: readonly string[]): boolean {
  return argv.some((arg, i) => arg === '--kind=rewards' || (arg === '--kind' && argv[i + 1] === 'rewards'));
}

/**
 * Parses `argv` for `--kind rewards`; reads EVENTHUB_FULLY_QUALIFIED_NAMESPACE, EVENTHUB_CONNECTION_STRING and
 * REWARDS_EVENT_HUB_NAME from `env`. @throws UsageError naming every bad option.
 */
export function parseRewardsArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, runId: string): RewardsProducerOptions | 'help' {
  const values = parseCommandLine(argv, SPECS);
  if (values === 'help') return 'help';
  const read = optionReader(values);
  const retries = read.integer('retries', { min: 0, max: 100, default: 0 });
  const options = {
    count: read.integer('count', { min: 1, max: 100_000, default: 10 }),
    customers: read.integer('customers', { min: 1, max: 10_000, default: 3 }),
    retries,
    retryShare: read.number('retry-share', { min: 0, max: 1, default: 1 }),
    mode: read.choice<CloudEventMode>('mode', ['structured', 'binary'], 'structured'),
    seed: read.integer('seed', { min: 0, max: 2 ** 32 - 1, default: 1 }),
    idPrefix: read.text('id-prefix', { default: `pay-${runId}`, maxLength: 100 }),
    customerPrefix: read.text('customer-prefix', { default: `cust-${runId}`, maxLength: 100 }),
    source: read.text('source', { default: '/payments', maxLength: 500 }),
    currency: read.text('currency', { default: 'EUR', pattern: /^[A-Z]{3}$/, what: 'an ISO 4217 code: three upper-case letters, e.g. EUR' }),
    hub: read.text('hub', {
      default: env.REWARDS_EVENT_HUB_NAME || 'payments-succeeded',
      pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,255}$/,
      what: 'an Event Hub name',
    }),
  };
  if (values['retry-share'] !== undefined && retries === 0) read.problem('--retry-share needs --retries 1 or more');
  read.done();
  const dryRun = read.flag('dry-run');
  return { ...options, target: hubTarget(read.optional('namespace'), options.hub, env), dryRun };
}

/** The options' Azure hub. @throws UsageError when there is none (and `--dry-run` was not given). */
export function requireTarget(options: RewardsProducerOptions): AzureHubTarget {
  if (options.target) return options.target;
  throw new UsageError(
    'no Event Hubs to send to: pass --namespace <name>.servicebus.windows.net (or set EVENTHUB_FULLY_QUALIFIED_NAMESPACE), ' +
      'or set EVENTHUB_CONNECTION_STRING, or use --dry-run',
  );
}

function hubTarget(namespaceArg: string | undefined, hub: string, env: Readonly<Record<string, string | undefined>>): AzureHubTarget | undefined {
  const host = namespaceHost(namespaceArg, env.EVENTHUB_FULLY_QUALIFIED_NAMESPACE, 'Event Hubs');
  if (host) return { kind: 'identity', fullyQualifiedNamespace: host, hub };
  const connectionString = env.EVENTHUB_CONNECTION_STRING?.trim();
  return connectionString ? { kind: 'connectionString', connectionString, hub } : undefined;
}
