import { activeInstanceMs, billablePeriodMs } from '../../tools/cost/billableTime';

describe('Flex Consumption billable time: 1 s minimum, then rounded up to 100 ms, per active period of an instance', () => {
  test('a period under 1 s bills 1 s; past it, rounds up to the next 100 ms', () => {
    expect(billablePeriodMs(0)).toBe(1_000);
    expect(billablePeriodMs(40)).toBe(1_000);
    expect(billablePeriodMs(1_000)).toBe(1_000);
    expect(billablePeriodMs(1_001)).toBe(1_100);
    expect(billablePeriodMs(13_450)).toBe(13_500);
    expect(() => billablePeriodMs(-1)).toThrow(RangeError);
    expect(() => billablePeriodMs(Number.NaN)).toThrow(RangeError);
  });

  test('overlapping executions on one instance bill their union once', () => {
    // 0-3 s and 1-2 s overlap: one period of 3 s.
    expect(
      activeInstanceMs([
        { startMs: 0, durationMs: 3_000 },
        { startMs: 1_000, durationMs: 1_000 },
      ]),
    ).toBe(3_000);
    // 16 executions of 50 ms started together: one period, at least 1 s.
    expect(activeInstanceMs(Array.from({ length: 16 }, () => ({ startMs: 5_000, durationMs: 50 })))).toBe(1_000);
  });

  test('each execution counts for at least 1 s, which can join it to the next one', () => {
    // 50 ms at 0 and 50 ms at 900: the first lasts to 1,000 by the minimum, so one period 0-1,900.
    expect(
      activeInstanceMs([
        { startMs: 900, durationMs: 50 },
        { startMs: 0, durationMs: 50 },
      ]),
    ).toBe(1_900);
    // Far apart: two periods of 1 s.
    expect(
      activeInstanceMs([
        { startMs: 0, durationMs: 50 },
        { startMs: 5_000, durationMs: 50 },
      ]),
    ).toBe(2_000);
  });

  test('no execution, no billed time', () => {
    expect(activeInstanceMs([])).toBe(0);
  });
});
