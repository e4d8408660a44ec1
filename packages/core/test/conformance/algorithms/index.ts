/**
 * Every algorithm's cases. A new algorithm adds its `<kind>.cases.ts` and one line here; the
 * conformance and differential tests pick it up.
 */

import { debtScenarios } from '../debt.scenarios';
import {
  lockoutScenarios,
  mixedProtectionScenarios,
  refundScenarios,
} from '../protection.scenarios';
import type { AlgorithmCases, Scenario } from '../table';
import { fixedWindowCases } from './fixed-window.cases';
import { gcraCases } from './gcra.cases';
import { leakyBucketCases } from './leaky-bucket.cases';
import { multiPolicyScenarios } from './multi.cases';
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

export const SCENARIOS: Scenario[] = [
  ...ALGORITHM_CASES.flatMap((c) => c.scenarios),
  ...multiPolicyScenarios,
  ...refundScenarios,
  ...lockoutScenarios,
  ...mixedProtectionScenarios,
  ...debtScenarios,
];
