import { readFileSync } from 'node:fs';
import type { HostLogCount } from '../local/durable/DurableEngineHost';

export type { HostLogCount };

/** host.json's `logging.logLevel`: category (or `default`) to level name. */
export type LogLevels = Readonly<Record<string, string>>;

const LEVELS = ['Trace', 'Debug', 'Information', 'Warning', 'Error', 'Critical', 'None'];

function rank(level: string): number {
  const i = LEVELS.findIndex((l) => l.toLowerCase() === level.toLowerCase());
  if (i < 0) throw new Error(`unknown log level '${level}' (expected one of ${LEVELS.join(', ')})`);
  return i;
}

/** host.json's `logging.logLevel`, `default` Information when left out (the Functions host's default). */
export function hostJsonLogLevels(hostJsonPath: string): LogLevels {
  const json = JSON.parse(readFileSync(hostJsonPath, 'utf8')) as { logging?: { logLevel?: Record<string, string> } };
  return { default: 'Information', ...(json.logging?.logLevel ?? {}) };
}

/**
 * The level a category is logged at under `levels`, the way Microsoft.Extensions.Logging (and so the Functions host)
 * picks a filter rule: the longest category prefix that matches, case-insensitive; `default` when none does.
 */
export function levelFor(category: string, levels: LogLevels): string {
  let best: string | undefined;
  for (const name of Object.keys(levels))
    if (name.toLowerCase() !== 'default' && category.toLowerCase().startsWith(name.toLowerCase()) && (!best || name.length > best.length)) best = name;
  const chosen = best ?? Object.keys(levels).find((n) => n.toLowerCase() === 'default');
  return chosen === undefined ? 'Information' : levels[chosen];
}

/** The counted records `levels` let through (a subset of what was counted, when `levels` are no lower than the run's). */
export function recordsAt(counts: readonly HostLogCount[], levels: LogLevels): HostLogCount[] {
  return counts.filter((c) => rank(c.level) >= rank(levelFor(c.category, levels)) && rank(c.level) < rank('None'));
}

/** Counts `after` minus counts `before`, per category and level (rows that did not grow are left out). */
export function diffHostCounts(after: readonly HostLogCount[], before: readonly HostLogCount[]): HostLogCount[] {
  const key = (c: HostLogCount) => `${c.category}\u0000${c.level}`;
  const earlier = new Map(before.map((c) => [key(c), c]));
  return after
    .map((c) => ({ ...c, records: c.records - (earlier.get(key(c))?.records ?? 0), bytes: c.bytes - (earlier.get(key(c))?.bytes ?? 0) }))
    .filter((c) => c.records > 0);
}

/** Records and bytes summed over rows. */
export function totalOf(counts: readonly HostLogCount[]): { records: number; bytes: number } {
  return counts.reduce((t, c) => ({ records: t.records + c.records, bytes: t.bytes + c.bytes }), { records: 0, bytes: 0 });
}

/**
 * Lines for a report: records and bytes per payment of each category and level counted, largest first, then the
 * total, under the levels they were counted at.
 */
export function hostTelemetryLines(design: string, payments: number, counts: readonly HostLogCount[], levels: LogLevels): string[] {
  const per = (n: number) => (Math.round((n / payments) * 100) / 100).toString();
  const total = totalOf(counts);
  return [
    `${design}: the Durable host's log records at host.json's logging.logLevel ${JSON.stringify(levels)}: ${per(total.records)} records, ${per(total.bytes)} bytes a payment`,
    ...[...counts]
      .sort((a, b) => b.bytes - a.bytes)
      .map(
        (c) =>
          `  ${c.category} (${c.level}): ${per(c.records)} records, ${per(c.bytes)} bytes a payment${c.sample ? `; e.g. ${JSON.stringify(c.sample.slice(0, 160))}` : ''}`,
      ),
  ];
}

/** Records that the Functions host writes for every execution of any function: `Function.<name>` (Executing/Executed) and `Host.Results` (the request row). */
const PER_EXECUTION = /^(Function\.[^.]+|Host\.Results)$/;

/**
 * The host's records a run counted, priced at `levels` (default: the run's own): `durable` = the records the Durable
 * host wrote (the orchestrator, entity and activity executions, the extension, its storage client); `trigger` = the
 * records the Functions host writes for each execution of the trigger too (`Function.<name>`, `Host.Results`), at the
 * per-execution figure measured on the Durable executions times the trigger's executions (in the bench the trigger runs
 * in the bench's process, not in the host).
 * @throws Error when `levels` set a category below the run's level: records below the run's levels were not counted.
 */
export function hostRecordsPriced(
  counts: readonly HostLogCount[],
  runLevels: LogLevels,
  levels: LogLevels = runLevels,
  durableExecutions: number,
  triggerExecutions: number,
): { durable: { records: number; bytes: number }; trigger: { records: number; bytes: number } } {
  for (const category of new Set([...Object.keys(levels), ...Object.keys(runLevels), ...counts.map((c) => c.category)]))
    if (rank(levelFor(category, levels)) < rank(levelFor(category, runLevels)))
      throw new Error(
        `host.json level ${levelFor(category, levels)} for '${category}' is below the run's (${levelFor(category, runLevels)}): those records were not counted`,
      );
  const kept = recordsAt(counts, levels);
  const perExecution = totalOf(kept.filter((c) => PER_EXECUTION.test(c.category)));
  const share = durableExecutions > 0 ? triggerExecutions / durableExecutions : 0;
  return { durable: totalOf(kept), trigger: { records: perExecution.records * share, bytes: perExecution.bytes * share } };
}
