// The Jest configuration StrykerJS's jest runner uses (tools/mutation/stryker.jest.config.mjs, docs/mutation.md): the
// project's jest.config.js narrowed to the fast tests that exercise the payment lifecycle, so that each mutant runs in
// seconds. Left out: the real Durable engine (test/durable), the e2e tests, the simulator's test (the command runner
// runs the simulator itself: stryker.sim.config.mjs), and the tests of what is not the lifecycle (infra, docs, rewards,
// orders, packaging). The integration tests here start their own Azurite (about a second) only when one of their
// tests covers the mutant.
const base = require('../../jest.config.js');

/** Test files, relative to the repository root. */
const TESTS = [
  // In-memory: the orchestration, entity and activities' pure parts, the consumer, the store rules.
  'test/unit/callFence.test.ts',
  'test/unit/chargeEntity.test.ts',
  'test/unit/chargeOrchestration.test.ts',
  'test/unit/chargePatience.test.ts',
  'test/unit/completedKeyCache.test.ts',
  'test/unit/deadLetterKeys.test.ts',
  'test/unit/durableCharge.test.ts',
  'test/unit/durableInstances.test.ts',
  'test/unit/handOffOneWay.test.ts',
  'test/unit/handOffOrchestration.test.ts',
  'test/unit/keys.test.ts',
  'test/unit/keys.property.test.ts',
  'test/unit/paymentReconciler.test.ts',
  'test/unit/providerRounds.test.ts',
  'test/unit/paymentsConsumerDuplicates.test.ts',
  'test/unit/providerClient.test.ts',
  'test/unit/providerFindCharge.test.ts',
  'test/unit/providerLookup.test.ts',
  'test/unit/recordRules.test.ts',
  'test/unit/recordWriteRefused.test.ts',
  'test/unit/retention.test.ts',
  'test/unit/storeConflict.test.ts',
  'test/unit/storeOutage.test.ts',
  'test/unit/tableEncoding.test.ts',
  'test/unit/tableLimits.test.ts',
  'test/unit/tableRows.test.ts',
  'test/unit/taskHubDeadline.test.ts',
  'test/unit/tickBudget.test.ts',
  'test/unit/timerSchedule.test.ts',
  'test/unit/triggerKeys.test.ts',
  'test/unit/durablePurge.test.ts',
  'test/unit/lapsedRecords.test.ts',
  'test/unit/paymentReconcilerReports.test.ts',
  'test/unit/paymentRetry.test.ts',
  'test/unit/paymentsConsumer.test.ts',
  'test/unit/paymentsHandler.test.ts',
  'test/unit/paymentsLifecycle.test.ts',
  'test/unit/refusedStart.test.ts',
  'packages/idempotency/test/memory/storeContract.memory.test.ts',
  // Azurite (one per test file, started only when the file has a test to run): the Table store and the consumer on it.
  'packages/idempotency/test/table/storeContract.table.test.ts',
  'packages/idempotency/test/table/tableStore.test.ts',
  'packages/idempotency/test/table/expirySweep.quickstart.test.ts',
  'test/integration/paymentsConsumer.test.ts',
  'test/integration/paymentsHandOff.test.ts',
  'test/integration/paymentsLifetimes.test.ts',
  'test/integration/paymentRetry.test.ts',
  'test/integration/providerLookup.test.ts',
  'test/integration/reconcilerKeepAlive.test.ts',
  'test/integration/recordLifecycle.test.ts',
  'test/integration/lapsedRecords.test.ts',
  'test/integration/sweepHeldRecords.test.ts',
  'test/integration/expirySweep.test.ts',
  'test/integration/storeWriteEdges.test.ts',
  'test/integration/storeInputs.test.ts',
  'test/integration/storeDeadline.test.ts',
  'test/integration/storeErrorTruth.test.ts',
  'test/integration/storeErrorCause.test.ts',
  'test/integration/roundTrips.test.ts',
  'test/integration/makeIdempotent.test.ts',
  // The core's protocol (decision rules, errors, keys, options): the wrappers' and Cosmos documents' unit tests reach it in memory.
  'test/unit/makeIdempotentHandler.test.ts',
  'test/unit/makeIdempotentBatch.test.ts',
  'test/unit/leaseHeartbeat.test.ts',
  'test/unit/digest.test.ts',
  'test/unit/cosmosDocuments.test.ts',
  'test/unit/errors.test.ts',
  'test/unit/storeInputs.test.ts',
  'test/unit/storeOptions.test.ts',
  // The Table store's expiry sweep on Azurite, its options, the retention rule's refusals.
  'test/unit/expirySweeperOptions.test.ts',
  'test/integration/sweepDelete.test.ts',
  'test/integration/sweepRun.test.ts',
  // The shard layout, routes and ownership check; the charge activity's body, the record write's retry, the payments
  // queue, wiring, Payment row and functions.
  'test/unit/shards.test.ts',
  'test/unit/shardOperatorPaths.test.ts',
  'test/integration/shardLayoutRefusal.test.ts',
  'test/integration/shardLayoutCrossCheck.test.ts',
  'test/unit/chargeOnce.test.ts',
  'test/unit/recordWriteRetry.test.ts',
  'test/unit/paymentQueue.test.ts',
  'test/unit/paymentsWiring.test.ts',
  'test/unit/paymentRow.test.ts',
  'test/integration/shardOwnership.test.ts',
  'test/unit/paymentsFunctions.test.ts',
  // Azurite: the Table store's workflow, claim workflow and batch claims, with faults on the wire.
  'packages/idempotency/test/table/tableStoreWrites.test.ts',
  'packages/idempotency/test/table/tableAcquire.test.ts',
  'packages/idempotency/test/table/tableClaimMany.test.ts',
  'packages/idempotency/test/table/markerTable.test.ts',
  'packages/idempotency/test/table/tableUnknownWrite.test.ts',
  // The tests that reach the rewards markers' sweep and the Cosmos hold and reconciler read directly.
  'test/integration/rewardMarkers.test.ts',
  'test/integration/rewardMarkerRefresh.test.ts',
  'test/integration/rewardSweepResume.test.ts',
  'test/integration/cosmosHeldRecords.test.ts',
  'test/integration/cosmosLapsedRecords.test.ts',
  // The sweep's metrics and the rewards markers in memory.
  'test/unit/sweepMetrics.test.ts',
  'test/unit/rewardMarkers.test.ts',
  // The queue's identity, the message schema, the Table store's errors, the sweep's checkpoint, query and chunking, the
  // shard sample.
  'test/unit/paymentQueueIdentity.test.ts',
  'test/unit/paymentSchema.test.ts',
  'test/unit/tableStoreErrors.test.ts',
  'test/integration/sweepCheckpoint.test.ts',
  'test/unit/sweepQuery.test.ts',
  'test/integration/sweepChunking.test.ts',
  'test/integration/shardSample.test.ts',
  // The money-safety work of issue 62 (in memory): the ledger check's verdicts, the provider's word after a call that
  // may have charged and the late-success alarm, an engine's copies of an activity against the call fence, a key used
  // before.
  'test/unit/ledgerCheck.test.ts',
  // The ledger check's rows (checkpoint, discrepancies) on a table client stub: each call bounded, named in its errors.
  'test/unit/ledgerRows.test.ts',
  // The ledger check timer's wiring from the settings (skip, refusal at start).
  'test/unit/ledgerCheckTimer.test.ts',
  'test/unit/providerWord.test.ts',
  'test/unit/engineCopies.test.ts',
  'test/unit/keyUsedBefore.test.ts',
  // Azurite: the ledger check's tick, checkpoint and discrepancy rows (src/app/ledgerCheckTimer.ts,
  // src/payments/ledgerRows.ts) against the fake provider, and the key console's reading of those rows.
  'test/integration/ledgerCheck.test.ts',
  'test/integration/keysConsoleLedger.test.ts',
];

const tsconfig = require('../../tsconfig.json');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  rootDir: '../..',
  // Stryker's jest runner runs a mutant's covering tests with --findRelatedTests on the mutated file, which follows
  // imports only through files Jest's module map holds: the sources and tools too, not just the test folders (a test
  // reaches the core's protocol through packages/idempotency/src/internal.ts).
  roots: [...base.roots, '<rootDir>/src', '<rootDir>/packages/idempotency/src', '<rootDir>/tools'],
  // MUTATE_NEW_TESTS (comma-separated test files): only those, to measure what new tests kill on their own
  // (stryker.newtests.config.mjs, docs/mutation.md "After").
  testMatch: (process.env.MUTATE_NEW_TESTS ? process.env.MUTATE_NEW_TESTS.split(',') : TESTS).map((file) => `<rootDir>/${file.trim()}`),
  // Transpile only (no type check per file): the instrumented sources carry `// @ts-nocheck` anyway, and `npm run
  // typecheck` is the type check. The core is imported from its sources (moduleNameMapper), so no dist/ is needed.
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: { ...tsconfig.compilerOptions, isolatedModules: true } }] },
  globalSetup: undefined,
  // Under Stryker only the test files holding a covering test are loaded per mutant (testIndex.js).
  // (Its name holds "jest-circus": Stryker's per-test coverage accepts only a runner so named.)
  testRunner: '<rootDir>/tools/mutation/jest-circus-recording.js',
  testSequencer: '<rootDir>/tools/mutation/coveringSequencer.js',
};
