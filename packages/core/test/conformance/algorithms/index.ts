/**
 * Every algorithm's cases. A new algorithm adds its `<kind>.cases.ts` and one line here; the
 * conformance and differential tests pick it up.
 */

import {
  CONFORMANCE_SCENARIOS,
  DEBT_SCENARIOS,
  LEASE_TAKE_SCENARIOS,
  LIVE_LIMIT_SCENARIOS,
} from '../../../src/testing/scenarios/index';
import type { AlgorithmCases, Scenario } from '../table';
import { fixedWindowCases } from './fixed-window.cases';
import { gcraCases } from './gcra.cases';
import { leakyBucketCases } from './leaky-bucket.cases';
import { slidingLogCases } from './sliding-log.cases';
import { slidingWindowCases } from './sliding-window.cases';
import { smoothBurstyCases } from './smooth-bursty.cases';
import { smoothWarmingUpCases } from './smooth-warming-up.cases';
import { tokenBucketCases } from './token-bucket.cases';

export const ALGORITHM_CASES: AlgorithmCases[] = [
  fixedWindowCases,
  slidingLogCases,
  tokenBucketCases,
  gcraCases,
  slidingWindowCases,
  leakyBucketCases,
  smoothBurstyCases,
  smoothWarmingUpCases,
];

/**
 * The whole table, as the published kit holds it (src/testing/scenarios/index.ts), debt, live limits
 * and lease takes included.
 */
export const SCENARIOS: Scenario[] = [
  ...CONFORMANCE_SCENARIOS,
  ...DEBT_SCENARIOS,
  ...LIVE_LIMIT_SCENARIOS,
  ...LEASE_TAKE_SCENARIOS,
];
