import { optionReader, parseCommandLine, UsageError, type OptionSpecs } from '../cli/commandLine';
import { OrderMessageType, OrderStatus } from '../../src/orders/messages';
import { MAX_SHARDS } from '../../src/payments/shards';
import { ORDER_STATUSES, type PlanOptions } from './messages';

/**
 * Command-line parsing for the producer. Pure: takes argv and an environment object, returns options or
 * throws a `UsageError` (the tools' shared one) whose message says what is wrong and how to fix it.
 */

/** Where to send: a namespace with Microsoft Entra ID (DefaultAzureCredential) or a connection string. */
export type ProducerConnection =
  | { readonly kind: 'identity'; readonly fullyQualifiedNamespace: string }
  | { readonly kind: 'connectionString'; readonly connectionString: string }
  | { readonly kind: 'none' };

/** Everything the producer needs. */
export interface ProducerOptions extends PlanOptions {
  readonly queue: string;
  /** Payments: the task hubs they are routed to by key (`PAYMENT_SHARD_COUNT`); above 1 `queue` is the base of `<queue>-<shard>`. */
  readonly shards: number;
  readonly connection: ProducerConnection;
  readonly dryRun: boolean;
  /** Pause before every round after the first (to outlast the broker's duplicate-detection window). */
  readonly resendDelaySeconds: number;
}

/** Usage text printed by --help and after usage errors. */
export const USAGE = `Usage: npm run send -- --kind payments|orders [options]
       npm run send -- --kind rewards [options]   (Event Hubs: see npm run send -- --kind rewards --help)

  --kind <payments|orders>     message type (required)
  --count <n>                  distinct business ids (default 1, at most 100000)
  --duplicates <n>             resend every message unchanged n more times (default 0, at most 1000)
  --reuse-keys <n>             resend every id n more times with a different body (default 0, at most 1000)
                               (at most 1000000 messages in all)
  --resend-delay-seconds <s>   wait before each resend round (default 0, at most 2147483). The queues detect duplicate
                               MessageIds for 10 minutes (PT10M): resends inside that window are dropped by
                               the broker and never reach the consumer; use 600+ to exercise the consumer.
  --queue <name>               default: PAYMENTS_QUEUE_NAME / ORDERS_QUEUE_NAME or the kind
  --shards <n>                 payments: N task hubs routed by key (default PAYMENT_SHARD_COUNT or 1, at most 64);
                               above 1 each payment goes to <queue>-<shard> (src/payments/shards.ts), <queue> the base
  --namespace <host>           e.g. sb-abc.servicebus.windows.net (or SERVICEBUS_FULLY_QUALIFIED_NAMESPACE);
                               authenticates with DefaultAzureCredential (needs Azure Service Bus Data Sender)
                               SERVICEBUS_CONNECTION_STRING (env only) is used when no namespace is given
  --id-prefix <text>           business ids are <prefix>-0001... (default pay-<run>/ord-<run>)
  --customer-id <id>           default cust-1
  --currency <ISO 4217>        default EUR
  --amount <minor units>       payments: integer > 0 (default 1999)
  --sku <sku> --quantity <n> --unit-price <minor units>   orders: one line (default sku-1, 1, 1999)
  --type <OrderPlaced|OrderStatusChanged>   orders: message type (default OrderPlaced), sent as the property "type"
  --status <placed|paid|shipped|delivered|cancelled>   OrderStatusChanged: the status (default paid)
  --version <n>                OrderStatusChanged: the order's status version (default 1, 1 to 9007199254740991);
                               MessageId <orderId>:status:<version>; --reuse-keys sends the same version with another status
  --dry-run                    print the messages as JSON lines, send nothing
  --help, -h                   this text`;

/** Caps of the producer's numbers (the totals it may send, Node's longest timer, the consumers' schemas). */
export const PRODUCER_LIMITS = {
  count: 100_000,
  resends: 1_000,
  /** count x (1 + duplicates + reuse-keys). */
  totalMessages: 1_000_000,
  /** Node timers hold at most 2^31 - 1 ms. */
  resendDelaySeconds: 2_147_483,
  quantity: 1_000_000,
} as const;

const SPECS: OptionSpecs = {
  kind: { type: 'string' },
  count: { type: 'string' },
  duplicates: { type: 'string' },
  'reuse-keys': { type: 'string' },
  'resend-delay-seconds': { type: 'string' },
  queue: { type: 'string' },
  shards: { type: 'string' },
  namespace: { type: 'string' },
  'id-prefix': { type: 'string' },
  'customer-id': { type: 'string' },
  currency: { type: 'string' },
  amount: { type: 'string' },
  sku: { type: 'string' },
  quantity: { type: 'string' },
  'unit-price': { type: 'string' },
  type: { type: 'string' },
  status: { type: 'string' },
  version: { type: 'string' },
  'dry-run': { type: 'boolean' },
};

/**
 * Parses `argv` (and the namespace, connection string and queue names from `env`); `'help'` for --help.
 * @throws UsageError naming every bad option.
 */
export function parseProducerArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, runId: string): ProducerOptions | 'help' {
  const values = parseCommandLine(argv, SPECS);
  if (values === 'help') return 'help';
  const read = optionReader(values);
  if (values.kind === undefined) read.problem('--kind is required: payments or orders');
  const kind = read.choice('kind', ['payments', 'orders'] as const, 'payments');
  const defaultQueue = kind === 'orders' ? env.ORDERS_QUEUE_NAME || 'orders' : env.PAYMENTS_QUEUE_NAME || 'payments';
  const options = {
    kind,
    count: read.integer('count', { min: 1, max: PRODUCER_LIMITS.count, default: 1 }),
    duplicates: read.integer('duplicates', { min: 0, max: PRODUCER_LIMITS.resends, default: 0 }),
    reusedKeys: read.integer('reuse-keys', { min: 0, max: PRODUCER_LIMITS.resends, default: 0 }),
    resendDelaySeconds: read.integer('resend-delay-seconds', { min: 0, max: PRODUCER_LIMITS.resendDelaySeconds, default: 0 }),
    amount: read.integer('amount', { min: 1, max: Number.MAX_SAFE_INTEGER, default: 1999 }),
    quantity: read.integer('quantity', { min: 1, max: PRODUCER_LIMITS.quantity, default: 1 }),
    unitPrice: read.integer('unit-price', { min: 0, max: Number.MAX_SAFE_INTEGER, default: 1999 }),
    currency: read.text('currency', { default: 'EUR', pattern: /^[A-Z]{3}$/, what: 'an ISO 4217 code: three upper-case letters, e.g. EUR' }),
    customerId: read.text('customer-id', { default: 'cust-1', maxLength: 128 }),
    sku: read.text('sku', { default: 'sku-1', maxLength: 100 }),
    idPrefix: read.text('id-prefix', { default: `${kind === 'orders' ? 'ord' : 'pay'}-${runId}`, maxLength: 100 }),
    queue: read.text('queue', { default: defaultQueue, maxLength: 260 }),
    shards: read.integer('shards', { min: 1, max: MAX_SHARDS, default: Number(env.PAYMENT_SHARD_COUNT) || 1 }),
    messageType: read.choice('type', [OrderMessageType.OrderPlaced, OrderMessageType.OrderStatusChanged] as const, OrderMessageType.OrderPlaced),
    status: read.choice('status', ORDER_STATUSES, OrderStatus.Paid),
    version: read.integer('version', { min: 1, max: Number.MAX_SAFE_INTEGER, default: 1 }),
  };
  if (kind !== 'orders' && values.type !== undefined) read.problem('--type is for --kind orders only');
  if (kind === 'orders' && values.shards !== undefined) read.problem('--shards is for --kind payments only');
  if (options.messageType !== OrderMessageType.OrderStatusChanged) {
    for (const name of ['status', 'version']) if (values[name] !== undefined) read.problem(`--${name} is for --type OrderStatusChanged only`);
  }
  const total = options.count * (1 + options.duplicates + options.reusedKeys);
  if (total > PRODUCER_LIMITS.totalMessages) {
    read.problem(`--count x (1 + --duplicates + --reuse-keys) must be at most ${PRODUCER_LIMITS.totalMessages} messages, got ${total}`);
  }
  read.done();

  const dryRun = read.flag('dry-run');
  const connection = connectionFrom(read.optional('namespace'), env);
  if (connection.kind === 'none' && !dryRun) {
    throw new UsageError(
      'no Service Bus to send to: pass --namespace <name>.servicebus.windows.net (or set SERVICEBUS_FULLY_QUALIFIED_NAMESPACE), ' +
        'or set SERVICEBUS_CONNECTION_STRING, or use --dry-run',
    );
  }
  return { ...options, kind: options.kind, connection, dryRun, runId };
}

/**
 * --namespace, else SERVICEBUS_FULLY_QUALIFIED_NAMESPACE (identity), else SERVICEBUS_CONNECTION_STRING.
 * A bare namespace name gets `.servicebus.windows.net` appended; a URL is reduced to its host.
 */
export function connectionFrom(namespaceArg: string | undefined, env: Readonly<Record<string, string | undefined>>): ProducerConnection {
  const host = namespaceHost(namespaceArg, env.SERVICEBUS_FULLY_QUALIFIED_NAMESPACE, 'Service Bus');
  if (host) return { kind: 'identity', fullyQualifiedNamespace: host };
  const connectionString = env.SERVICEBUS_CONNECTION_STRING?.trim();
  return connectionString ? { kind: 'connectionString', connectionString } : { kind: 'none' };
}

/**
 * The fully qualified namespace `--namespace` (else `fromEnv`) names, or undefined when neither is set.
 * @throws UsageError when it is not a namespace host name.
 */
export function namespaceHost(namespaceArg: string | undefined, fromEnv: string | undefined, service: string): string | undefined {
  const namespace = (namespaceArg ?? fromEnv ?? '').trim();
  if (!namespace) return undefined;
  const host = namespace.replace(/^[a-z]+:\/\//i, '').replace(/[:/].*$/, '');
  if (!/^[A-Za-z][A-Za-z0-9-]{4,48}[A-Za-z0-9](\.[A-Za-z0-9-]+)*$/.test(host))
    throw new UsageError(`--namespace "${namespaceArg ?? namespace}" is not ${service === 'Event Hubs' ? 'an' : 'a'} ${service} namespace host name`);
  return host.includes('.') ? host : `${host}.servicebus.windows.net`;
}
