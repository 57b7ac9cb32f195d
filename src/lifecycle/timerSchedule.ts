import type { Settings } from '../config/settings';
import { ConfigurationError } from 'azure-functions-idempotency';

const DAY_S = 86_400;
const DAY_MS = 86_400_000;
/** Days of one Gregorian cycle (400 years): dates and weekdays repeat exactly after it (146,097 = 7 x 20,871). */
export const GREGORIAN_CYCLE_DAYS = 146_097;
/** 2000-01-01, a Saturday (weekday 6), starts the cycle the walk covers. */
const CYCLE_START_MS = Date.UTC(2000, 0, 1);
const CYCLE_START_WEEKDAY = 6;

/** The values each of the six NCRONTAB fields allows, ascending. */
export interface NcrontabSchedule {
  readonly seconds: readonly number[];
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly days: readonly number[];
  readonly months: readonly number[];
  /** 0 = Sunday ... 6 = Saturday. */
  readonly daysOfWeek: readonly number[];
}

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] },
  { name: 'day-of-week', min: 0, max: 6, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

/**
 * Parses an NCRONTAB expression as the Functions timer reads it: six fields, `second minute hour day month
 * day-of-week`, each `*`, a value, a range `a-b`, a step `*\/n`, `a-b/n` or `a/n` (from `a` to the field's end), or a
 * comma list of those; months and weekdays also by name (`Jan`, `Mon`). A day must match both the day and the
 * day-of-week field (NCrontab's rule, not Vixie cron's either-or).
 * @throws ConfigurationError naming the field and what is wrong with it.
 */
export function parseNcrontab(expression: string): NcrontabSchedule {
  const text = expression.trim();
  const problem = (detail: string) => new ConfigurationError(`EXPIRY_TIMER_SCHEDULE "${expression}" ${detail}`);
  if (/^\d+(\.\d+)?(:\d+){1,2}$/.test(text))
    throw problem('is a TimeSpan: the Flex Consumption plan runs NCRONTAB schedules only (six fields: second minute hour day month day-of-week)');
  const parts = text.split(/\s+/);
  if (parts.length !== 6) throw problem(`has ${parts.length} field(s): NCRONTAB has 6 (second minute hour day month day-of-week), e.g. "0 */15 * * * *"`);
  const [seconds, minutes, hours, days, months, daysOfWeek] = parts.map((part, i) => parseField(part, FIELDS[i], problem));
  return { seconds, minutes, hours, days, months, daysOfWeek };
}

function parseField(text: string, spec: FieldSpec, problem: (detail: string) => ConfigurationError): number[] {
  const bad = (detail: string) => problem(`has a bad ${spec.name} field "${text}": ${detail}`);
  const value = (token: string): number => {
    const named = spec.names?.indexOf(token.toUpperCase()) ?? -1;
    if (named >= 0) return spec.min + named;
    if (!/^\d+$/.test(token)) throw bad(`"${token}" is not a number${spec.names ? ' or a name' : ''}`);
    const n = Number(token);
    if (n < spec.min || n > spec.max) throw bad(`${n} is outside ${spec.min}-${spec.max}`);
    return n;
  };
  const allowed = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') throw bad('an empty list item');
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined) throw bad(`"${item}" has two steps`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0) throw bad(`the step "${stepText}" is not a whole number of 1 or more`);
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*') [from, to] = [spec.min, spec.max];
    else if (range.includes('-')) {
      const [a, b, more] = range.split('-');
      if (more !== undefined) throw bad(`"${range}" is not a range a-b`);
      [from, to] = [value(a), value(b)];
      if (from > to) throw bad(`the range ${range} runs backwards`);
    } else {
      from = value(range);
      to = stepText === undefined ? from : spec.max;
    }
    for (let v = from; v <= to; v += step) allowed.add(v);
  }
  return [...allowed].sort((a, b) => a - b);
}

/**
 * The longest time between two consecutive runs of `schedule`, in ms, exactly: walks every day of one 400-year
 * Gregorian cycle (146,097 days, after which dates and weekdays repeat; bounded work, a few ms) in UTC (the Linux
 * Functions host's time zone) and takes the largest gap between runs, within a day and across days, the cycle's
 * wrap included.
 * @throws ConfigurationError when no day of the cycle matches (e.g. the 31st of February): it never runs.
 */
export function longestGapMs(schedule: NcrontabSchedule, expression = ''): number {
  const times: number[] = [];
  for (const h of schedule.hours) for (const m of schedule.minutes) for (const s of schedule.seconds) times.push(h * 3600 + m * 60 + s);
  times.sort((a, b) => a - b);
  const first = times[0];
  const last = times[times.length - 1];
  let longestS = 0;
  for (let i = 1; i < times.length; i++) longestS = Math.max(longestS, times[i] - times[i - 1]);
  const days = new Set(schedule.days);
  const months = new Set(schedule.months);
  const weekdays = new Set(schedule.daysOfWeek);
  let firstDay = -1;
  let previousDay = -1;
  for (let d = 0; d < GREGORIAN_CYCLE_DAYS; d++) {
    const date = new Date(CYCLE_START_MS + d * DAY_MS);
    if (!days.has(date.getUTCDate()) || !months.has(date.getUTCMonth() + 1) || !weekdays.has((CYCLE_START_WEEKDAY + d) % 7)) continue;
    if (previousDay < 0) firstDay = d;
    else longestS = Math.max(longestS, (d - previousDay) * DAY_S - last + first);
    previousDay = d;
  }
  if (firstDay < 0) throw new ConfigurationError(`EXPIRY_TIMER_SCHEDULE "${expression}" never runs: no date matches its day, month and day-of-week fields`);
  longestS = Math.max(longestS, (firstDay + GREGORIAN_CYCLE_DAYS - previousDay) * DAY_S - last + first);
  return longestS * 1000;
}

/**
 * Refuses, at start, an expiry timer schedule whose longest gap between two runs exceeds the DLQ resubmit margin.
 * Each run moves a held record (a dead-lettered payment's) to at least the redelivery window ahead; a message an
 * operator resubmits just after a run leaves the dead-letter queue, so only that run's hold covers it: its copy is
 * delivered within queue TTL + deliveries, leaving the margin for the next run to come. Runs further apart than
 * the margin can let a hold lapse, and a late resubmission be charged again.
 * A margin of 0 says the deployment does not cover resubmissions of dead-lettered messages (no gap between runs
 * could be 0): any schedule that runs is accepted, and the result carries a `warning` to log on every run.
 * @returns the longest gap, for logging; `warning` when the margin is 0.
 * @throws ConfigurationError for a malformed schedule, one that never runs, or one with too long a gap.
 */
export function assertScheduleRenewsHolds(settings: Pick<Settings, 'EXPIRY_TIMER_SCHEDULE' | 'DLQ_RESUBMIT_MARGIN_DAYS'>): {
  longestGapMs: number;
  warning?: string;
} {
  const expression = settings.EXPIRY_TIMER_SCHEDULE;
  const gapMs = longestGapMs(parseNcrontab(expression), expression);
  const marginMs = settings.DLQ_RESUBMIT_MARGIN_DAYS * DAY_MS;
  if (marginMs === 0) return { longestGapMs: gapMs, warning: UNCOVERED_RESUBMISSIONS };
  if (gapMs > marginMs)
    throw new ConfigurationError(
      `EXPIRY_TIMER_SCHEDULE "${expression}" leaves up to ${(gapMs / DAY_MS).toFixed(2)} days between runs, more than ` +
        `DLQ_RESUBMIT_MARGIN_DAYS (${settings.DLQ_RESUBMIT_MARGIN_DAYS} days): the hold on a dead-lettered payment's record ` +
        `could lapse between two runs; run the timer at least every ${settings.DLQ_RESUBMIT_MARGIN_DAYS} days (default "0 */15 * * * *") ` +
        `or raise DLQ_RESUBMIT_MARGIN_DAYS (and IDEMPOTENCY_RETENTION_DAYS with it)`,
    );
  return { longestGapMs: gapMs };
}

/** What the timer logs on every run when `DLQ_RESUBMIT_MARGIN_DAYS` is 0. */
export const UNCOVERED_RESUBMISSIONS =
  'DLQ_RESUBMIT_MARGIN_DAYS is 0: resubmissions of dead-lettered messages are not covered (a held record may be swept ' +
  "before a resubmitted copy's last delivery, which would then run its work again); set a margin of at least the " +
  'longest gap between expiry timer runs to cover them';
