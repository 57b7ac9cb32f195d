import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { loadSettings } from '../../src/config/settings';
import { assertScheduleRenewsHolds, longestGapMs, parseNcrontab, UNCOVERED_RESUBMISSIONS } from '../../src/lifecycle/timerSchedule';

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
