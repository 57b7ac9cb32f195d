import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { loadSettings } from '../../src/config/settings';
import { assertScheduleRenewsHolds, longestGapMs, parseNcrontab, UNCOVERED_RESUBMISSIONS, type NcrontabSchedule } from '../../src/lifecycle/timerSchedule';

const SECOND_MS = 1_000;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const gapOf = (expression: string): number => longestGapMs(parseNcrontab(expression), expression);
const check = (EXPIRY_TIMER_SCHEDULE: string, DLQ_RESUBMIT_MARGIN_DAYS = 14) => assertScheduleRenewsHolds({ EXPIRY_TIMER_SCHEDULE, DLQ_RESUBMIT_MARGIN_DAYS });

describe('the expiry timer schedule: NCRONTAB parsing', () => {
  test('six fields with *, values, ranges, lists, steps and names', () => {
    expect(parseNcrontab('0 */15 * * * *')).toMatchObject({ seconds: [0], minutes: [0, 15, 30, 45], hours: expect.any(Array) });
    expect(parseNcrontab('0 5/20 1-5/2 1,15 Jan-Mar mon-FRI')).toEqual({
      seconds: [0],
      minutes: [5, 25, 45],
      hours: [1, 3, 5],
      days: [1, 15],
      months: [1, 2, 3],
      daysOfWeek: [1, 2, 3, 4, 5],
    });
    expect(parseNcrontab('  0  0  3  *  *  0 ').daysOfWeek).toEqual([0]);
    expect(parseNcrontab('0 0 0 * * *').hours).toEqual([0]);
    expect(parseNcrontab('0 0 0 * * *').days).toHaveLength(31);
  });

  test.each([
    ['0 */15 * * *', /has 5 field\(s\): NCRONTAB has 6 \(second minute hour day month day-of-week\)/],
    ['0 0 */15 * * * *', /has 7 field\(s\)/],
    ['00:15:00', /is a TimeSpan: the Flex Consumption plan runs NCRONTAB schedules only/],
    ['0 60 * * * *', /bad minute field "60": 60 is outside 0-59/],
    ['0 0 24 * * *', /bad hour field "24": 24 is outside 0-23/],
    ['0 0 0 0 * *', /bad day field "0": 0 is outside 1-31/],
    ['0 0 0 * 13 *', /bad month field "13": 13 is outside 1-12/],
    ['0 0 0 * * 7', /bad day-of-week field "7": 7 is outside 0-6/],
    ['0 */0 * * * *', /bad minute field "\*\/0": the step "0" is not a whole number of 1 or more/],
    ['0 */x * * * *', /the step "x" is not a whole number/],
    ['0 5-1 * * * *', /bad minute field "5-1": the range 5-1 runs backwards/],
    ['0 1-2-3 * * * *', /"1-2-3" is not a range a-b/],
    ['0 1/2/3 * * * *', /"1\/2\/3" has two steps/],
    ['0 1,,2 * * * *', /bad minute field "1,,2": an empty list item/],
    ['0 x * * * *', /bad minute field "x": "x" is not a number$/],
    ['0 0 0 * Foo *', /bad month field "Foo": "Foo" is not a number or a name/],
    ['0 0 0 * * -1', /bad day-of-week field "-1"/],
    ['0 0 0 31 2 *', /never runs: no date matches its day, month and day-of-week fields/],
  ])('%s is refused: %s', (expression, message) => {
    expect(() => check(expression)).toThrow(ConfigurationError);
    expect(() => check(expression)).toThrow(message);
    expect(() => check(expression)).toThrow(`EXPIRY_TIMER_SCHEDULE "${expression}"`);
  });
});

describe('the expiry timer schedule: the longest gap between runs', () => {
  test.each([
    ['0 */15 * * * *', 15 * MINUTE_MS],
    ['*/10 * * * * *', 10 * SECOND_MS],
    ['0 5/20 * * * *', 20 * MINUTE_MS],
    ['0 0 1-5/2 * * *', 20 * HOUR_MS], // 05:00 -> 01:00 the next day
    ['0 0 */6 * * *', 6 * HOUR_MS],
    ['0 0 3 * * 0', 7 * DAY_MS], // weekly, Sunday 03:00
    ['0 30 9 * * Mon-Fri', 3 * DAY_MS], // Friday -> Monday
    ['0 0 0 1,15 * *', 17 * DAY_MS], // 15th of a 31-day month -> the 1st
    ['0 0 0 1 * *', 31 * DAY_MS],
    ['0 0 0 1 1 *', 366 * DAY_MS], // yearly: across a leap year
    // NCrontab's rule: a day must match the day AND the weekday field. Fridays the 13th are at most 14 months apart
    // (13 July 2001 -> 13 September 2002, 427 days).
    ['0 0 0 13 * 5', Date.UTC(2002, 8, 13) - Date.UTC(2001, 6, 13)],
    // 29 February: every 4 years, but 2100 is no leap year: 8 years, which a one-year walk would never see.
    ['0 0 0 29 2 *', Date.UTC(2104, 1, 29) - Date.UTC(2096, 1, 29)],
  ])('%s: %d ms', (expression, gapMs) => {
    expect(gapOf(expression)).toBe(gapMs);
  });

  test('bounded work: one walk of a 400-year cycle per schedule (~50-150 ms here), even for a schedule that runs every second', () => {
    expect(gapOf('* * * * * *')).toBe(SECOND_MS);
    expect(gapOf('0 0 0 29 2 1')).toBeGreaterThan(20 * 365 * DAY_MS); // a Monday 29 February: 28 or 40 years apart
  });
});

describe('assertScheduleRenewsHolds: runs at most the DLQ resubmit margin apart', () => {
  test('the default schedule (every 15 minutes) and a weekly one pass with the default 14-day margin', () => {
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' });
    expect(settings.EXPIRY_TIMER_SCHEDULE).toBe('0 */15 * * * *');
    expect(assertScheduleRenewsHolds(settings)).toEqual({ longestGapMs: 15 * MINUTE_MS });
    expect(check('0 0 3 * * 0')).toEqual({ longestGapMs: 7 * DAY_MS });
  });

  test('"the 1st and the 15th of the month" is refused: up to 17 days between runs, more than 14', () => {
    expect(() => check('0 0 0 1,15 * *')).toThrow(ConfigurationError);
    expect(() => check('0 0 0 1,15 * *')).toThrow(
      'EXPIRY_TIMER_SCHEDULE "0 0 0 1,15 * *" leaves up to 17.00 days between runs, more than DLQ_RESUBMIT_MARGIN_DAYS (14 days)',
    );
    // ... and passes with a margin that covers it.
    expect(check('0 0 0 1,15 * *', 17)).toEqual({ longestGapMs: 17 * DAY_MS });
  });

  test('a gap equal to the margin passes; one a little longer is refused', () => {
    expect(check('0 0 0 * * 0', 7)).toEqual({ longestGapMs: 7 * DAY_MS });
    expect(() => check('0 0 0 * * 0', 6.99)).toThrow(/more than DLQ_RESUBMIT_MARGIN_DAYS \(6.99 days\)/);
  });

  test('a margin of 0 covers no resubmission: any schedule that runs is accepted, with a warning; any margin above 0 is held to the rule', () => {
    expect(check('0 */15 * * * *', 0)).toEqual({ longestGapMs: 15 * MINUTE_MS, warning: UNCOVERED_RESUBMISSIONS });
    expect(check('0 0 0 1 1 *', 0)).toEqual({ longestGapMs: 366 * DAY_MS, warning: UNCOVERED_RESUBMISSIONS });
    expect(UNCOVERED_RESUBMISSIONS).toMatch(/^DLQ_RESUBMIT_MARGIN_DAYS is 0: resubmissions of dead-lettered messages are not covered/);
    // The schedule is still checked: malformed or never running is refused whatever the margin.
    expect(() => check('0 */15 * * *', 0)).toThrow(/has 5 field\(s\)/);
    expect(() => check('0 0 0 31 2 *', 0)).toThrow(/never runs/);
    // The smallest margin above 0 is no opt-out: 0.001 days (86.4 s) against runs 15 minutes apart is refused.
    expect(() => check('0 */15 * * * *', 0.001)).toThrow(/more than DLQ_RESUBMIT_MARGIN_DAYS \(0.001 days\)/);
    expect(check('0 */15 * * * *').warning).toBeUndefined();
  });

  test('the settings accept a margin of 0 (as the Bicep template does) and the default schedule then passes with the warning', () => {
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', DLQ_RESUBMIT_MARGIN_DAYS: '0' });
    expect(settings.DLQ_RESUBMIT_MARGIN_DAYS).toBe(0);
    expect(assertScheduleRenewsHolds(settings)).toEqual({ longestGapMs: 15 * MINUTE_MS, warning: UNCOVERED_RESUBMISSIONS });
  });
});

const TIMESPAN = /is a TimeSpan: the Flex Consumption plan runs NCRONTAB schedules only \(six fields: second minute hour day month day-of-week\)$/;

describe('the expiry timer schedule: what an operator reads when it is refused at start', () => {
  test.each(['00:15', '10:00', '1:2:3', '1.02:00:00', '1.10:00:00', '100:00:00'])(
    'the TimeSpan %s is named as a TimeSpan (the plan runs NCRONTAB only)',
    (expression) => {
      expect(() => check(expression)).toThrow(ConfigurationError);
      expect(() => check(expression)).toThrow(TIMESPAN);
    },
  );

  test.each([
    ['x 00:15:00', 2],
    ['00:15:00 x', 2],
    ['0:15:00:00', 1],
    ['.1:00:00', 1],
    ['1.:00:00', 1],
  ])('%s is no TimeSpan: it is refused for its field count (%d)', (expression, fields) => {
    expect(() => check(expression)).toThrow(`EXPIRY_TIMER_SCHEDULE "${expression}" has ${fields} field(s): NCRONTAB has 6`);
    expect(() => check(expression)).not.toThrow(TIMESPAN);
  });

  test.each([
    ['0 5x * * * *', 'has a bad minute field "5x": "5x" is not a number'],
    ['0 x5 * * * *', 'has a bad minute field "x5": "x5" is not a number'],
    ['0 */5x * * * *', 'has a bad minute field "*/5x": the step "5x" is not a whole number of 1 or more'],
    ['0 */x5 * * * *', 'has a bad minute field "*/x5": the step "x5" is not a whole number of 1 or more'],
  ])('%s: a value or step with other characters around its digits is refused', (expression, message) => {
    expect(() => check(expression)).toThrow(new ConfigurationError(`EXPIRY_TIMER_SCHEDULE "${expression}" ${message}`));
  });

  test('a gap longer than the margin: the whole message, with what to change', () => {
    expect(() => check('0 0 0 1,15 * *')).toThrow(
      new ConfigurationError(
        'EXPIRY_TIMER_SCHEDULE "0 0 0 1,15 * *" leaves up to 17.00 days between runs, more than DLQ_RESUBMIT_MARGIN_DAYS (14 days): the hold on a ' +
          'dead-lettered payment\'s record could lapse between two runs; run the timer at least every 14 days (default "0 */15 * * * *") or raise ' +
          'DLQ_RESUBMIT_MARGIN_DAYS (and IDEMPOTENCY_RETENTION_DAYS with it)',
      ),
    );
  });

  test('a schedule that never runs, checked without its text, says so with an empty expression', () => {
    const never = parseNcrontab('0 0 0 30 2 *');
    expect(() => longestGapMs(never)).toThrow(ConfigurationError);
    expect(() => longestGapMs(never)).toThrow(
      new ConfigurationError('EXPIRY_TIMER_SCHEDULE "" never runs: no date matches its day, month and day-of-week fields'),
    );
  });
});

describe('the expiry timer schedule: values in order whatever the order written', () => {
  test('a list written out of order comes back ascending, numerically (9 before 10)', () => {
    expect(parseNcrontab('0 45,5,15 10,9 * * *')).toMatchObject({ minutes: [5, 15, 45], hours: [9, 10] });
    expect(parseNcrontab('0 0 0 * Dec,Jan * ').months).toEqual([1, 12]);
    expect(parseNcrontab('0 0 0 * * Sat,Sun').daysOfWeek).toEqual([0, 6]);
  });

  test('the gap of a schedule given with its hours out of order is the same as in order', () => {
    const inOrder = parseNcrontab('0 0 0,12 * * *');
    const outOfOrder: NcrontabSchedule = { ...inOrder, hours: [12, 0] };
    expect(longestGapMs(inOrder)).toBe(12 * HOUR_MS);
    expect(longestGapMs(outOfOrder)).toBe(12 * HOUR_MS);
    expect(longestGapMs({ ...parseNcrontab('0 0 0 * * *'), seconds: [30, 0], minutes: [0] })).toBe(DAY_MS - 30_000);
  });
});

/**
 * The expiry timer's longest gap between runs (src/lifecycle/timerSchedule.ts) against an independent count: every run
 * of 800 years (two Gregorian cycles from 2000, weekdays from JavaScript's own calendar, not the module's cycle start),
 * the largest difference between consecutive runs. Schedules whose longest gap falls within a day, across days, at the
 * cycle's wrap (Feb 29 skips 2100, 2200, 2300), or on dates that need both the day and the weekday. Then the names and
 * bounds the parser reads, and the warning an operator sees.
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
