import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { assertMarkersOutliveReplay, REPLAY_MARGIN_DAYS } from '../../src/lifecycle/rewardMarkers';

const DAY_MS = 86_400_000;

describe('assertMarkersOutliveReplay: what an operator reads when the rewards markers would not outlive a replay', () => {
  test('a hub that compacts: the whole message, with the policy named and what to deploy', () => {
    expect(() =>
      assertMarkersOutliveReplay({ REWARDS_EVENT_HUB_RETENTION_DAYS: 7, REWARDS_MARKER_RETENTION_DAYS: 30, REWARDS_EVENT_HUB_CLEANUP_POLICY: 'Compact' }),
    ).toThrow(
      new ConfigurationError(
        'REWARDS_EVENT_HUB_CLEANUP_POLICY is Compact: a compacted hub keeps the latest event of each key with no time limit, so an event can be ' +
          'read again after any marker retention and would apply twice; deploy the hub with cleanupPolicy Delete',
      ),
    );
  });

  test('markers kept a day short: the whole message, with the retention to raise it to', () => {
    expect(REPLAY_MARGIN_DAYS).toBe(1);
    const short = { REWARDS_EVENT_HUB_RETENTION_DAYS: 3, REWARDS_MARKER_RETENTION_DAYS: 3.5 };
    expect(() => assertMarkersOutliveReplay(short)).toThrow(ConfigurationError);
    expect(() => assertMarkersOutliveReplay(short)).toThrow(
      new ConfigurationError(
        'REWARDS_MARKER_RETENTION_DAYS (3.5 days) is shorter than what can replay an event: REWARDS_EVENT_HUB_RETENTION_DAYS (3 days) + 1 day; ' +
          'raise it to at least 4',
      ),
    );
  });

  test('the retention at the bound (hub + 1 day) passes; it comes back in whole milliseconds', () => {
    expect(assertMarkersOutliveReplay({ REWARDS_EVENT_HUB_RETENTION_DAYS: 3, REWARDS_MARKER_RETENTION_DAYS: 4 })).toBe(4 * DAY_MS);
    expect(assertMarkersOutliveReplay({ REWARDS_EVENT_HUB_RETENTION_DAYS: 3, REWARDS_MARKER_RETENTION_DAYS: 4.0000000001 })).toBe(4 * DAY_MS);
    expect(
      assertMarkersOutliveReplay({ REWARDS_EVENT_HUB_RETENTION_DAYS: 3, REWARDS_MARKER_RETENTION_DAYS: 4.5, REWARDS_EVENT_HUB_CLEANUP_POLICY: 'Delete' }),
    ).toBe(4.5 * DAY_MS);
  });
});
