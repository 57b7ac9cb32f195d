/**
 * The deployments docs/performance.md's sizing table gives (`npm run sizing`, tools/sizing/): the Bicep parameters of
 * each row, compiled by `npm run infra:build` against infra/main.bicep like the switch combinations.
 * test/unit/sizing.test.ts checks that these are what the sizing computes from the run of record.
 */
export interface SizingRowParameters {
  /** Payments a second the row is sized for. */
  readonly target: number;
  readonly shardCount: number;
  readonly durablePartitionCount: number;
  readonly serviceBusSku: 'Standard' | 'Premium';
  readonly serviceBusMessagingUnits: number;
}

export const SIZING_ROWS: readonly SizingRowParameters[] = [
  { target: 500, shardCount: 4, durablePartitionCount: 16, serviceBusSku: 'Premium', serviceBusMessagingUnits: 1 },
  { target: 2_000, shardCount: 13, durablePartitionCount: 16, serviceBusSku: 'Premium', serviceBusMessagingUnits: 4 },
  { target: 10_000, shardCount: 63, durablePartitionCount: 16, serviceBusSku: 'Premium', serviceBusMessagingUnits: 32 },
];
