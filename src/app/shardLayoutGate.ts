import type { Clock } from 'azure-functions-idempotency';
import type { ShardLayout } from '../payments/shards';
import type { OwnershipReport } from '../payments/shardOwnership';
import { MetricNames, type Telemetry } from '../telemetry/Telemetry';

/**
 * The payments consumer's refusal of a shard layout its table was not migrated to (docs/DESIGN.md "Past one task
 * hub", "The refusal"): before the first claim of a process the table's payment records are checked
 * (`strayPaymentRecords`, bounded); one that another shard owns refuses every delivery until a check finds none.
 */

/**
 * This shard's table holds a live payment record another shard owns, or (this shard's table empty) another shard's table
 * holds one this shard owns: the layout changed without the record migration.
 */
export class ShardLayoutRefusedError extends Error {
  override readonly name = 'ShardLayoutRefusedError';
  constructor(
    readonly layout: Pick<ShardLayout, 'count' | 'index'>,
    readonly strays: OwnershipReport['strays'],
  ) {
    const first = strays[0];
    super(
      `shard layout refused: payment ${first.paymentId} (${first.status}) is in the table of shard ${first.foundOn ?? layout.index}, but belongs to shard ` +
        `${first.owner} of ${layout.count}${first.foundOn === undefined ? '' : ' (this shard)'}${strays.length > 1 ? ` (and ${strays.length - 1} more found)` : ''}: PAYMENT_SHARD_COUNT changed ` +
        `without the record migration. No payment is claimed on this shard until it is done: npm run payments:reshard (docs/deploy.md section 11)`,
    );
  }
}

/** How long a refusal stands before the table is read again (a migration finished meanwhile lets the shard go on). */
export const LAYOUT_RECHECK_MS = 60_000;

export interface ShardLayoutGateDeps {
  readonly layout: Pick<ShardLayout, 'count' | 'index'>;
  /** One bounded check of the table (`strayPaymentRecords` on this shard's table). */
  readonly check: (nowMs: number) => Promise<OwnershipReport>;
  readonly clock: Clock;
  readonly recheckMs?: number;
}

/**
 * The gate a delivery passes before its claim (its telemetry: the invocation's log too): the first call checks the table; a clean check holds for the
 * process's life (a change of N is a new deployment of every shard: new processes); a refusal is counted
 * (`payments.shard_layout_refused`, alert `payments-shard-layout`), logged as an error naming the key, its owner
 * shard and this shard, and thrown ({@link ShardLayoutRefusedError}) to every delivery until a check, at most every
 * {@link LAYOUT_RECHECK_MS}, finds none. Concurrent deliveries share one check. A check the store does not answer
 * throws its error (the delivery rides it out as any store outage) and is made again by the next delivery.
 */
export function shardLayoutGate(deps: ShardLayoutGateDeps): (telemetry: Telemetry) => Promise<void> {
  const recheckMs = deps.recheckMs ?? LAYOUT_RECHECK_MS;
  let passed = false;
  let refused: { error: ShardLayoutRefusedError; atMs: number } | undefined;
  let running: Promise<void> | undefined;
  const checkOnce = async (telemetry: Telemetry): Promise<void> => {
    const nowMs = deps.clock.nowMs();
    const report = await deps.check(nowMs);
    if (report.strays.length === 0) {
      if (refused)
        telemetry.log('info', `payments: shard layout accepted again: no record of another shard found (${report.checked} read)`, fields('layout-accepted'));
      passed = true;
      refused = undefined;
      return;
    }
    const error = new ShardLayoutRefusedError(deps.layout, report.strays);
    refused = { error, atMs: nowMs };
    const first = report.strays[0];
    telemetry.count(MetricNames.shardLayoutRefused, { consumer: 'payments', shard: deps.layout.index, owner: first.owner });
    telemetry.log('error', `payments: ${error.message}`, {
      ...fields('layout-refused'),
      idempotencyKey: first.paymentId,
      ownerShard: first.owner,
      foundOnShard: first.foundOn ?? deps.layout.index,
      strays: report.strays.map((s) => `${s.paymentId}:${s.owner}`).join(','),
    });
  };
  const fields = (outcome: string) => ({ consumer: 'payments', outcome, shard: deps.layout.index, shardCount: deps.layout.count });
  return async (telemetry) => {
    if (passed) return;
    if (refused && deps.clock.nowMs() - refused.atMs < recheckMs) throw refused.error;
    running ??= checkOnce(telemetry).finally(() => (running = undefined));
    await running;
    if (refused) throw refused.error;
  };
}
