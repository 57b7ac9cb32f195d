import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { MessageKind, PlanOptions } from './messages';

/**
 * Command-line parsing for the producer. Pure: takes argv and an environment object, returns options or
 * throws a `ProducerUsageError` whose message says what is wrong and how to fix it.
 */

/** Where to send: a namespace with Microsoft Entra ID (DefaultAzureCredential) or a connection string. */
export type ProducerConnection =
  | { readonly kind: 'identity'; readonly fullyQualifiedNamespace: string }
  | { readonly kind: 'connectionString'; readonly connectionString: string }
  | { readonly kind: 'none' };

/** Everything the producer needs. */
export interface ProducerOptions extends PlanOptions {
  readonly queue: string;
  readonly connection: ProducerConnection;
  readonly dryRun: boolean;
  /** Pause before every round after the first (to outlast the broker's duplicate-detection window). */
  readonly resendDelaySeconds: number;
}

/** Bad command line or environment; the message is meant for the user. */
export class ProducerUsageError extends Error {
  override readonly name = 'ProducerUsageError';
}

/** Usage text printed by --help and after usage errors. */
export const USAGE = `Usage: npm run send -- --kind payments|orders [options]

  --kind <payments|orders>     message type (required)
  --count <n>                  distinct business ids (default 1)
  --duplicates <n>             resend every message unchanged n more times (default 0)
  --reuse-keys <n>             resend every id n more times with a different body (default 0)
  --resend-delay-seconds <s>   wait before each resend round (default 0). The queues detect duplicate
                               MessageIds for 10 minutes (PT10M): resends inside that window are dropped by
                               the broker and never reach the consumer; use 600+ to exercise the consumer.
  --queue <name>               default: PAYMENTS_QUEUE_NAME / ORDERS_QUEUE_NAME or the kind
  --namespace <host>           e.g. sb-abc.servicebus.windows.net (or SERVICEBUS_FULLY_QUALIFIED_NAMESPACE);
                               authenticates with DefaultAzureCredential (needs Azure Service Bus Data Sender)
                               SERVICEBUS_CONNECTION_STRING (env only) is used when no namespace is given
  --id-prefix <text>           business ids are <prefix>-0001... (default pay-<run>/ord-<run>)
  --customer-id <id>           default cust-1
  --currency <ISO 4217>        default EUR
  --amount <minor units>       payments: integer > 0 (default 1999)
  --sku <sku> --quantity <n> --unit-price <minor units>   orders: one line (default sku-1, 1, 1999)
  --dry-run                    print the messages as JSON lines, send nothing
  --help`;

const count = (name: string, min: number) =>
  z.coerce.number({ error: `${name} must be a number` }).int(`${name} must be an integer`).min(min, `${name} must be at least ${min}`);

const optionsSchema = z.object({
  kind: z.enum(['payments', 'orders'], { error: '--kind must be "payments" or "orders"' }),
  count: count('--count', 1).max(100_000, '--count must be at most 100000'),
  duplicates: count('--duplicates', 0).max(1000, '--duplicates must be at most 1000'),
  reusedKeys: count('--reuse-keys', 0).max(1000, '--reuse-keys must be at most 1000'),
  resendDelaySeconds: count('--resend-delay-seconds', 0),
  amount: count('--amount', 1),
  quantity: count('--quantity', 1),
  unitPrice: count('--unit-price', 0),
  currency: z.string().regex(/^[A-Z]{3}$/, '--currency must be an ISO 4217 code: three upper-case letters, e.g. EUR'),
  customerId: z.string().trim().min(1, '--customer-id must not be empty'),
  sku: z.string().trim().min(1, '--sku must not be empty'),
  idPrefix: z.string().trim().min(1, '--id-prefix must not be empty').max(100, '--id-prefix must be at most 100 characters'),
  queue: z.string().trim().min(1, '--queue must not be empty'),
});

/**
 * Parses `argv` (without node and script) and reads SERVICEBUS_FULLY_QUALIFIED_NAMESPACE,
 * SERVICEBUS_CONNECTION_STRING, PAYMENTS_QUEUE_NAME and ORDERS_QUEUE_NAME from `env`.
 * Returns `'help'` for --help.
 * @throws ProducerUsageError naming every bad option.
 */
export function parseProducerArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  runId: string,
): ProducerOptions | 'help' {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        kind: { type: 'string' },
        count: { type: 'string' },
        duplicates: { type: 'string' },
        'reuse-keys': { type: 'string' },
        'resend-delay-seconds': { type: 'string' },
        queue: { type: 'string' },
        namespace: { type: 'string' },
        'id-prefix': { type: 'string' },
        'customer-id': { type: 'string' },
        currency: { type: 'string' },
        amount: { type: 'string' },
        sku: { type: 'string' },
        quantity: { type: 'string' },
        'unit-price': { type: 'string' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    throw new ProducerUsageError((error as Error).message);
  }
  if (values.help) return 'help';
  const str = (name: string): string | undefined => values[name] as string | undefined;
  const kind = str('kind');
  if (kind === undefined) throw new ProducerUsageError('--kind is required: payments or orders');
  const defaultQueue = kind === 'orders' ? env.ORDERS_QUEUE_NAME || 'orders' : env.PAYMENTS_QUEUE_NAME || 'payments';

  const parsed = optionsSchema.safeParse({
    kind,
    count: str('count') ?? 1,
    duplicates: str('duplicates') ?? 0,
    reusedKeys: str('reuse-keys') ?? 0,
    resendDelaySeconds: str('resend-delay-seconds') ?? 0,
    amount: str('amount') ?? 1999,
    quantity: str('quantity') ?? 1,
    unitPrice: str('unit-price') ?? 1999,
    currency: str('currency') ?? 'EUR',
    customerId: str('customer-id') ?? 'cust-1',
    sku: str('sku') ?? 'sku-1',
    idPrefix: str('id-prefix') ?? `${kind === 'orders' ? 'ord' : 'pay'}-${runId}`,
    queue: str('queue') ?? defaultQueue,
  });
  // Each message already names its option.
  if (!parsed.success) throw new ProducerUsageError(parsed.error.issues.map((i) => i.message).join('; '));

  const dryRun = values['dry-run'] === true;
  const connection = connectionFrom(str('namespace'), env);
  if (connection.kind === 'none' && !dryRun) {
    throw new ProducerUsageError(
      'no Service Bus to send to: pass --namespace <name>.servicebus.windows.net (or set SERVICEBUS_FULLY_QUALIFIED_NAMESPACE), ' +
        'or set SERVICEBUS_CONNECTION_STRING, or use --dry-run',
    );
  }
  return { ...parsed.data, kind: parsed.data.kind as MessageKind, connection, dryRun, runId };
}

/**
 * --namespace, else SERVICEBUS_FULLY_QUALIFIED_NAMESPACE (identity), else SERVICEBUS_CONNECTION_STRING.
 * A bare namespace name gets `.servicebus.windows.net` appended; a URL is reduced to its host.
 */
export function connectionFrom(namespaceArg: string | undefined, env: Readonly<Record<string, string | undefined>>): ProducerConnection {
  const namespace = (namespaceArg ?? env.SERVICEBUS_FULLY_QUALIFIED_NAMESPACE ?? '').trim();
  if (namespace) {
    const host = namespace.replace(/^[a-z]+:\/\//i, '').replace(/[:/].*$/, '');
    if (!/^[A-Za-z][A-Za-z0-9-]{4,48}[A-Za-z0-9](\.[A-Za-z0-9-]+)*$/.test(host)) {
      throw new ProducerUsageError(`--namespace "${namespaceArg ?? namespace}" is not a Service Bus namespace host name`);
    }
    return { kind: 'identity', fullyQualifiedNamespace: host.includes('.') ? host : `${host}.servicebus.windows.net` };
  }
  const connectionString = env.SERVICEBUS_CONNECTION_STRING?.trim();
  if (connectionString) return { kind: 'connectionString', connectionString };
  return { kind: 'none' };
}
