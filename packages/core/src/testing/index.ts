/**
 * @floodgate/core/testing — the store conformance kit: the scenario table every store passes
 * and the differential harness that holds a store's decisions against the TypeScript twins, so
 * a third-party store (Postgres, DynamoDB, a Valkey module) proves it answers as Floodgate's
 * own. No test runner is imported: results are plain data, and `describeConformance` takes the
 * runner's functions. docs/store-kit.md
 *
 * @example
 * ```ts
 * import { CONFORMANCE_SCENARIOS, describeConformance, runDifferential } from '@floodgate/core/testing';
 *
 * describeConformance(
 *   { describe, it, assertNone: (mismatches) => expect(mismatches).toEqual([]) },
 *   'my store',
 *   CONFORMANCE_SCENARIOS,
 *   (clock) => myStore({ clock }),
 * );
 * it('agrees with the twins', async () => {
 *   expect((await runDifferential({ store: (clock) => myStore({ clock }) })).failure).toBeUndefined();
 * });
 * ```
 */
export {
  DIFFERENTIAL_KINDS,
  type DifferentialFailure,
  type DifferentialOptions,
  type DifferentialReport,
  runDifferential,
  type TraceStep,
} from './differential.js';
export {
  ALGORITHM_SCENARIOS,
  CONFORMANCE_SCENARIOS,
  DEBT_SCENARIOS,
  LEASE_TAKE_SCENARIOS,
  LIVE_LIMIT_SCENARIOS,
} from './scenarios/index.js';
export {
  describeConformance,
  type Expectation,
  type FakeClock,
  fakeClock,
  type Mismatch,
  pick,
  type RunOptions,
  runScenario,
  type Scenario,
  type Step,
  type StoreFactory,
  T0,
  type TestRunner,
} from './table.js';
