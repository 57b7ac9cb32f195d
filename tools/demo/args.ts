import type { ChaosOptions } from './chaosOptions';
import { DEFAULT_CHAOS_OPTIONS } from './chaosOptions';
import { optionReader, parseCommandLine, type OptionSpecs, type OptionValues } from '../cli/commandLine';
import { checkProviderUrlShape } from './preflight';
import { DEMO_MUTATIONS } from './mutations';

/** What `npm run demo -- ...` asked for. */
export interface DemoArgs {
  readonly chaos: Partial<ChaosOptions>;
  readonly json: boolean;
  /** `--report FILE.html`: where to write the HTML report, if asked. */
  readonly reportFile?: string;
  readonly help: boolean;
}

export const DEMO_USAGE = `usage: npm run demo -- [options]
  --messages N            logical messages, split between payments and orders (default ${DEFAULT_CHAOS_OPTIONS.messages}, at most 100000)
  --orders-share R        share of --messages for the orders consumer (default ${DEFAULT_CHAOS_OPTIONS.ordersShare}: 70 % payments, 30 % orders; 0 = payments only)
  --duplicate-rate R      extra copies sent by the producer per message (default ${DEFAULT_CHAOS_OPTIONS.duplicateRate}: 30 % sent twice)
  --crash-rate R          crash rate at each injection point, and rate of each provider fault (default ${DEFAULT_CHAOS_OPTIONS.crashRate})
  --consumers N           competing receivers on the queue (default ${DEFAULT_CHAOS_OPTIONS.consumers})
  --seed N                seed of the workload and of the fault decisions (default ${DEFAULT_CHAOS_OPTIONS.seed})
  --outages N             storage outages during the run (default ${DEFAULT_CHAOS_OPTIONS.outages}), each --outage-ms long (default ${DEFAULT_CHAOS_OPTIONS.outageMs})
  --lock-ms N             peek-lock duration (default ${DEFAULT_CHAOS_OPTIONS.lockDurationMs}); --max-delivery-count N (default ${DEFAULT_CHAOS_OPTIONS.maxDeliveryCount})
  --broker-dedup          turn on the broker's duplicate detection (10-minute window; off by default)
  --time-phase on|off     the time phase (default on): at --time-phase-at R of the run (default ${DEFAULT_CHAOS_OPTIONS.timePhaseAt}) the clock jumps
                          past retention, the expiry sweep runs, the DLQ is resubmitted, reused keys are sent after expiry
  --sweep-hold on|off     the sweep keeps the records of dead-lettered payments (default on, as the app's timer does)
  --provider-key-memory H hours the demo's fake provider remembers an Idempotency-Key, on the demo's clock (default
                          forever; 24 = Stripe's; 0 = it charges on every finished key's call): with the time phase, a
                          memory shorter than the jump leaves the app's records as the only guard against a second charge
  --provider-lookup M     none|by-key: PAYMENT_PROVIDER_LOOKUP, what the provider offers to find a charge by its key
                          (default by-key for the demo's provider, none for PAYMENT_PROVIDER_URL's); none also makes the
                          demo's provider answer the look-up 404, as Stripe
  --declared-key-memory H PAYMENT_PROVIDER_KEY_MEMORY_HOURS the app is told (default the demo's provider's memory, at most
                          24; PAYMENT_PROVIDER_URL's: 24, or the environment's PAYMENT_PROVIDER_KEY_MEMORY_HOURS)
  --host-kills N          real engine: Durable host kills after a charge, at most (default ${DEFAULT_CHAOS_OPTIONS.maxHostKills})
  --rewards-events N      rewards part (Event Hubs): distinct PaymentSucceeded events, 20 % sent twice, hosts crashing before
                          checkpoints (default ${DEFAULT_CHAOS_OPTIONS.rewardsEvents}; 0 = off)
  --mutate M              a deliberate mistake the ledger check must show: conflict-rejected (the first 3 chargeable
                          payments are recorded rejected, as a 409 read as a rejection would, while the provider charged)
  --json                  print one JSON object as the last line of stdout
  --report FILE.html      also write a self-contained HTML page: a timeline chart of the run and the invariant table
  --help, -h              this text
environment: PAYMENT_PROVIDER_URL (an http(s) URL on loopback that answers; checked before the run) uses that
  provider instead of starting the fake one; PAYMENT_PROVIDER_LOOKUP and PAYMENT_PROVIDER_KEY_MEMORY_HOURS declare
  its capability (the options above win).
exit code: 0 when every invariant holds, 1 when one fails (or more chargeable payments end uncharged in the
  dead-letter queue than the injected faults explain: a broken environment), 2 on a usage error or a provider
  URL that is not usable; 130/143 when stopped by SIGINT/SIGTERM (everything it started is stopped first).`;

const NUMBER_OPTIONS: Record<string, { key: keyof ChaosOptions; min: number; max: number; integer: boolean }> = {
  messages: { key: 'messages', min: 1, max: 100_000, integer: true },
  'orders-share': { key: 'ordersShare', min: 0, max: 1, integer: false },
  'duplicate-rate': { key: 'duplicateRate', min: 0, max: 10, integer: false },
  'crash-rate': { key: 'crashRate', min: 0, max: 0.5, integer: false },
  consumers: { key: 'consumers', min: 1, max: 256, integer: true },
  seed: { key: 'seed', min: 0, max: 2 ** 32 - 1, integer: true },
  outages: { key: 'outages', min: 0, max: 100, integer: true },
  'outage-ms': { key: 'outageMs', min: 0, max: 600_000, integer: true },
  'lock-ms': { key: 'lockDurationMs', min: 50, max: 600_000, integer: true },
  'max-delivery-count': { key: 'maxDeliveryCount', min: 1, max: 2_000, integer: true },
  'time-phase-at': { key: 'timePhaseAt', min: 0, max: 1, integer: false },
  'host-kills': { key: 'maxHostKills', min: 0, max: 100, integer: true },
  'rewards-events': { key: 'rewardsEvents', min: 0, max: 100_000, integer: true },
};

const SPECS: OptionSpecs = {
  ...Object.fromEntries(Object.keys(NUMBER_OPTIONS).map((name) => [name, { type: 'string' }])),
  'time-phase': { type: 'string' },
  'sweep-hold': { type: 'string' },
  'provider-key-memory': { type: 'string' },
  'provider-lookup': { type: 'string' },
  'declared-key-memory': { type: 'string' },
  mutate: { type: 'string' },
  'broker-dedup': { type: 'boolean' },
  json: { type: 'boolean' },
  report: { type: 'string' },
};

/**
 * Parses the demo's command line (`--name value` or `--name=value`) with the tools' shared parser.
 * @throws UsageError naming every bad option.
 */
export function parseDemoArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): DemoArgs {
  const parsed = parseCommandLine(argv, SPECS);
  if (parsed === 'help') return { chaos: {}, json: false, help: true };
  // The provider's declared capability: the options, else the app's own settings names in the environment.
  const values: OptionValues = {
    ...(env.PAYMENT_PROVIDER_LOOKUP ? { 'provider-lookup': env.PAYMENT_PROVIDER_LOOKUP } : {}),
    ...(env.PAYMENT_PROVIDER_KEY_MEMORY_HOURS ? { 'declared-key-memory': env.PAYMENT_PROVIDER_KEY_MEMORY_HOURS } : {}),
    ...parsed,
  };
  const read = optionReader(values);
  const chaos: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(NUMBER_OPTIONS)) {
    if (values[name] === undefined) continue;
    const rule = { min: spec.min, max: spec.max, default: Number.NaN };
    chaos[spec.key] = spec.integer ? read.integer(name, rule) : read.number(name, rule);
  }
  if (values['time-phase'] !== undefined) chaos.timePhase = read.choice('time-phase', ['on', 'off'] as const, 'on') === 'on';
  if (values['sweep-hold'] !== undefined) chaos.sweepHold = read.choice('sweep-hold', ['on', 'off'] as const, 'on') === 'on';
  if (read.flag('broker-dedup')) chaos.brokerDuplicateDetection = true;
  if (values['provider-key-memory'] !== undefined && values['provider-key-memory'] !== 'forever')
    chaos.providerKeyMemoryMs = read.number('provider-key-memory', { min: 0, max: 24 * 365 * 10, default: Number.NaN }) * 3_600_000;
  if (values.mutate !== undefined) chaos.mutation = read.choice('mutate', DEMO_MUTATIONS, DEMO_MUTATIONS[0]);
  if (values['provider-lookup'] !== undefined) chaos.providerLookup = read.choice('provider-lookup', ['none', 'by-key'] as const, 'none');
  if (values['declared-key-memory'] !== undefined)
    chaos.declaredKeyMemoryHours = read.number('declared-key-memory', { min: 0, max: 87_600, default: Number.NaN });
  const keepsNoKeys = chaos.declaredKeyMemoryHours === 0 || (chaos.declaredKeyMemoryHours === undefined && chaos.providerKeyMemoryMs === 0);
  if (keepsNoKeys && chaos.providerLookup === 'none')
    read.problem('a provider that keeps no keys (--declared-key-memory 0 or --provider-key-memory 0) needs --provider-lookup by-key');
  if (env.PAYMENT_PROVIDER_URL) {
    try {
      checkProviderUrlShape(env.PAYMENT_PROVIDER_URL);
      chaos.providerUrl = env.PAYMENT_PROVIDER_URL;
    } catch (error) {
      read.problem((error as Error).message);
    }
  }
  const reportFile =
    values.report === undefined ? undefined : read.text('report', { default: '', maxLength: 4_096, pattern: /\.html?$/i, what: 'a file name ending in .html' });
  read.done();
  return { chaos: chaos, json: read.flag('json'), reportFile, help: false };
}
