import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { longestGapMs, parseNcrontab, UNCOVERED_RESUBMISSIONS } from '../../src/lifecycle/timerSchedule';

/**
 * The expiry timer's longest gap between runs (src/lifecycle/timerSchedule.ts) against an independent count: every run
 * of 800 years (two Gregorian cycles from 2000, weekdays from JavaScript's own calendar, not the module's cycle start),
 * the largest difference between consecutive runs. Schedules whose longest gap falls within a day, across days, at the
 * cycle's wrap (Feb 29 skips 2100, 2200, 2300), or on dates that need both the day and the weekday. Then the names and
 * bounds the parser reads, and the warning an operator sees. Written for the fourth mutation pass's survivors.
 */
const DAY_S = 86_400;

/** The longest gap in ms, counted run by run over 800 years of real dates. */
function countedGapMs(expression: string): number {
  const schedule = parseNcrontab(expression);
  const times = schedule.hours.flatMap((h) => schedule.minutes.flatMap((m) => schedule.seconds.map((s) => h * 3600 + m * 60 + s))).sort((a, b) => a - b);
  const days = new Set(schedule.days);
  const months = new Set(schedule.months);
  const weekdays = new Set(schedule.daysOfWeek);
  let previous: number | undefined;
  let longest = 0;
  const start = Date.UTC(2000, 0, 1) / 1000;
  for (let d = 0; d < 2 * 146_097; d++) {
    const date = new Date((start + d * DAY_S) * 1000);
    if (!days.has(date.getUTCDate()) || !months.has(date.getUTCMonth() + 1) || !weekdays.has(date.getUTCDay())) continue;
    for (const t of times) {
      const at = start + d * DAY_S + t;
      if (previous !== undefined) longest = Math.max(longest, at - previous);
      previous = at;
    }
  }
  return longest * 1000;
}

describe('longestGapMs equals the run-by-run count', () => {
  test.each([
    ['0 30 6 * * *', 'daily at 06:30 (the first run of the day is not midnight)'],
    ['0 0 0,23 * * *', 'at 00:00 and 23:00: the longest gap is within the day'],
    ['15 10 1,2 * * *', 'at 01:10:15 and 02:10:15: the longest gap is across days'],
    ['0 0 12 13 * FRI', 'Friday the 13th at noon: the day and the weekday both'],
    ['0 0 6 29 2 *', 'Feb 29: eight years across 2100, 2200 and 2300'],
    ['0 0 0 31 12 *', 'New Year’s Eve: the cycle wrap'],
    ['0 45 23 1 1 *', 'January 1st, late: the wrap with the run late in the day'],
    ['0 15 10 * * MON-FRI', 'weekdays: the weekend gap'],
    ['0 0 0 1 1 MON', 'January 1st on a Monday: six or eleven years'],
    ['0 0 0 29 2 MON', 'Feb 29 on a Monday'],
    ['0 0 0 29 2 SAT', 'Feb 29 on a Saturday'],
    ['0 0 0 31 * FRI', 'Friday the 31st'],
    ['0 0 0 1 1,2 SUN', 'a Sunday January or February 1st'],
    ['0 0 0 28 2 SUN', 'a Sunday February 28th'],
  ])('%s (%s)', (expression) => {
    expect(longestGapMs(parseNcrontab(expression), expression)).toBe(countedGapMs(expression));
  });

  test('two of them by hand: 23 hours within the day; Friday the 13th at most 14 months apart (427 days)', () => {
    expect(longestGapMs(parseNcrontab('0 0 0,23 * * *'))).toBe(23 * 3_600_000);
    expect(longestGapMs(parseNcrontab('0 0 12 13 * FRI'))).toBe(427 * DAY_S * 1000);
  });
});

describe('parseNcrontab: names and bounds', () => {
  test.each(['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'].map((name, i) => [name, i + 1]))(
    'month %s is %d',
    (name, month) => {
      expect(parseNcrontab(`0 0 0 1 ${name} *`).months).toEqual([month]);
      expect(parseNcrontab(`0 0 0 1 ${name.toLowerCase()} *`).months).toEqual([month]);
    },
  );

  test.each(['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'].map((name, i) => [name, i]))('weekday %s is %d', (name, day) => {
    expect(parseNcrontab(`0 0 0 * * ${name}`).daysOfWeek).toEqual([day]);
  });

  test('a range of one value (5-5) is that value', () => {
    expect(parseNcrontab('0 5-5 * * * *').minutes).toEqual([5]);
  });

  test('a bad seconds field is named as the second field', () => {
    expect(() => parseNcrontab('61 * * * * *')).toThrow(ConfigurationError);
    expect(() => parseNcrontab('61 * * * * *')).toThrow('has a bad second field "61": 61 is outside 0-59');
  });
});

test('the warning when DLQ_RESUBMIT_MARGIN_DAYS is 0 says what is not covered and what to set', () => {
  expect(UNCOVERED_RESUBMISSIONS).toContain('DLQ_RESUBMIT_MARGIN_DAYS is 0: resubmissions of dead-lettered messages are not covered');
  expect(UNCOVERED_RESUBMISSIONS).toContain("before a resubmitted copy's last delivery, which would then run its work again");
  expect(UNCOVERED_RESUBMISSIONS).toContain('set a margin of at least the longest gap between expiry timer runs to cover them');
});
