/** `npm run cost`'s shards view (infra shardCount, docs/deploy.md section 11). */
import type { CostOptions, RunCounts } from './costModel';
import { creditsPerPayment, paymentsPerSecondPerShard, shardCost, shardsFor, standardPaymentsPerSecond, storageRequestsPerPayment } from './shards';

/** Shard counts shown beside the one a rate needs (docs/deploy.md section 11's table). */
const SHARD_COUNTS = [1, 2, 5, 8];

/**
 * Past one task hub: one shard's ceiling from this run's storage requests a payment (its account's 20,000 a second),
 * the shards `rate` needs, Service Bus Standard's ceiling (1,000 credits a second), and for each shard count the fixed
 * month and a million payments at `rate` (Premium at `premiumUnits` once the rate is past Standard's credits).
 */
export function printShards(runs: readonly RunCounts[], optionsOf: (run: RunCounts) => CostOptions, rate: number, premiumUnits: number): void {
  process.stdout.write(
    `\nShards (infra shardCount) at ${rate.toLocaleString('en-US')} payments a second: one shard's ceiling = 20,000 storage requests a second / the run's requests a payment;\n` +
      `Service Bus Standard = 1,000 credits a second / (send + receive + complete) a payment; past it Premium at ${premiumUnits} messaging unit(s) (the units a rate needs are not published: measure).\n` +
      `The storage account alone: other limits bind first (Durable's orchestrations per hub, the namespace, Flex): the sizing from every limit is npm run sizing -- --from FILE (docs/performance.md).\n`,
  );
  for (const run of runs) {
    const needed = shardsFor(rate, run);
    process.stdout.write(
      `  ${run.design.padEnd(8)} ${storageRequestsPerPayment(run).toFixed(1)} requests a payment -> ${paymentsPerSecondPerShard(run).toFixed(0)} payments a second a shard, ` +
        `${needed} shard(s) for ${rate}; Service Bus ${creditsPerPayment(run).toFixed(1)} credits a payment -> Standard to ${standardPaymentsPerSecond(run).toFixed(0)} a second\n`,
    );
    for (const shards of [...new Set([...SHARD_COUNTS, needed])].sort((a, b) => a - b)) {
      const c = shardCost(run, optionsOf(run), shards, rate, premiumUnits);
      const fit = shards >= needed ? 'carries the rate' : `carries ${(shards * paymentsPerSecondPerShard(run)).toFixed(0)} a second`;
      process.stdout.write(
        `    ${String(shards).padStart(2)} shard(s): fixed $${c.fixedStandard.toFixed(2)} a month on Standard, $${c.fixedPremium.toFixed(2)} on Premium; ` +
          `a million at the rate on ${c.serviceBus}: $${c.variablePerMillion.toFixed(2)} busy + $${c.fixedSharePerMillion.toFixed(2)} of the fixed month (${fit})\n`,
      );
    }
  }
}
