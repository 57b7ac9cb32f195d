import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { assertScheduleRenewsHolds, longestGapMs, parseNcrontab, type NcrontabSchedule } from '../../src/lifecycle/timerSchedule';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const check = (EXPIRY_TIMER_SCHEDULE: string, DLQ_RESUBMIT_MARGIN_DAYS = 14) => assertScheduleRenewsHolds({ EXPIRY_TIMER_SCHEDULE, DLQ_RESUBMIT_MARGIN_DAYS });
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
