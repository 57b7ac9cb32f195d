import type { ChaosOptions } from './chaos';
import { DEFAULT_CHAOS_OPTIONS } from './chaos';
import { assertLoopback } from './providerLedger';

/** What `npm run demo -- ...` asked for. */
export interface DemoArgs {
  readonly chaos: Partial<ChaosOptions>;
  readonly json: boolean;
  readonly help: boolean;
}

export const DEMO_USAGE = `usage: npm run demo -- [options]
  --messages N            logical messages, split between payments and orders (default ${DEFAULT_CHAOS_OPTIONS.messages})
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
  --json                  print one JSON object as the last line of stdout
environment: PAYMENT_PROVIDER_URL (loopback only) uses that provider instead of starting the fake one.
exit code: 0 when every invariant holds, 1 when one fails, 2 on a usage error.`;

/** Thrown for a bad command line; the message says which option. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const NUMBER_OPTIONS: Record<string, { key: keyof ChaosOptions; min: number; max: number; integer: boolean }> = {
  '--messages': { key: 'messages', min: 1, max: 1_000_000, integer: true },
  '--orders-share': { key: 'ordersShare', min: 0, max: 1, integer: false },
  '--duplicate-rate': { key: 'duplicateRate', min: 0, max: 10, integer: false },
  '--crash-rate': { key: 'crashRate', min: 0, max: 0.5, integer: false },
  '--consumers': { key: 'consumers', min: 1, max: 256, integer: true },
  '--seed': { key: 'seed', min: 0, max: 2 ** 32 - 1, integer: true },
  '--outages': { key: 'outages', min: 0, max: 100, integer: true },
  '--outage-ms': { key: 'outageMs', min: 0, max: 600_000, integer: true },
  '--lock-ms': { key: 'lockDurationMs', min: 50, max: 600_000, integer: true },
  '--max-delivery-count': { key: 'maxDeliveryCount', min: 1, max: 2_000, integer: true },
  '--time-phase-at': { key: 'timePhaseAt', min: 0, max: 1, integer: false },
};

/**
 * Parses the demo's command line (`--name value` or `--name=value`).
 * @throws UsageError naming the bad option.
 */
export function parseDemoArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): DemoArgs {
  const chaos: Record<string, unknown> = {};
  let json = false;
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (name === '--json') json = true;
    else if (name === '--help' || name === '-h') help = true;
    else if (name === '--broker-dedup') chaos.brokerDuplicateDetection = true;
    else if (name === '--time-phase') {
      const text = inline ?? argv[++i];
      if (text !== 'on' && text !== 'off') throw new UsageError(`--time-phase needs on or off, got ${JSON.stringify(text ?? '')}`);
      chaos.timePhase = text === 'on';
    }
    else if (NUMBER_OPTIONS[name]) {
      const spec = NUMBER_OPTIONS[name]!;
      const text = inline ?? argv[++i];
      const value = Number(text);
      if (text === undefined || text === '' || !Number.isFinite(value) || (spec.integer && !Number.isInteger(value)) || value < spec.min || value > spec.max) {
        throw new UsageError(`${name} needs ${spec.integer ? 'an integer' : 'a number'} from ${spec.min} to ${spec.max}, got ${JSON.stringify(text ?? '')}`);
      }
      chaos[spec.key] = value;
    } else throw new UsageError(`unknown option ${JSON.stringify(name)}`);
  }
  if (env.PAYMENT_PROVIDER_URL) {
    try {
      assertLoopback(env.PAYMENT_PROVIDER_URL);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    chaos.providerUrl = env.PAYMENT_PROVIDER_URL;
  }
  return { chaos: chaos as Partial<ChaosOptions>, json, help };
}
