/** The whole conformance table: every algorithm's scenarios, then several policies and protection. */
import type { Scenario } from '../table.js';
import { debtScenarios } from './debt.js';
import { fixedWindowScenarios } from './fixed-window.js';
import { gcraScenarios } from './gcra.js';
import { leakyBucketScenarios } from './leaky-bucket.js';
import { leaseTakeScenarios } from './lease-take.js';
import { liveLimitScenarios } from './live-limits.js';
import { multiPolicyScenarios } from './multi.js';
import { lockoutScenarios, mixedProtectionScenarios } from './protection.js';
import { refundScenarios } from './refunds.js';
import { setScenarios } from './set.js';
import { slidingLogScenarios } from './sliding-log.js';
import { slidingWindowScenarios } from './sliding-window.js';
import { smoothBurstyScenarios } from './smooth-bursty.js';
import { smoothWarmingUpScenarios } from './smooth-warming-up.js';
import { tokenBucketScenarios } from './token-bucket.js';

/** Each algorithm's scenarios, by kind. */
export const ALGORITHM_SCENARIOS: Readonly<Record<string, readonly Scenario[]>> = {
  'fixed-window': fixedWindowScenarios,
  'sliding-log': slidingLogScenarios,
  'token-bucket': tokenBucketScenarios,
  gcra: gcraScenarios,
  'sliding-window': slidingWindowScenarios,
  'leaky-bucket': leakyBucketScenarios,
  'smooth-bursty': smoothBurstyScenarios,
  'smooth-warming-up': smoothWarmingUpScenarios,
};

/** Every scenario a store must pass: the algorithms', several policies', refunds and blocks. */
export const CONFORMANCE_SCENARIOS: readonly Scenario[] = [
  ...Object.values(ALGORITHM_SCENARIOS).flat(),
  ...multiPolicyScenarios,
  ...refundScenarios,
  ...lockoutScenarios,
  ...mixedProtectionScenarios,
];

/**
 * Reservations settled into debt, penalties and `set`: for a store that can charge past the
 * limit (its prepared policies have `charge` and `set`, as the memory and Redis stores do).
 */
export const DEBT_SCENARIOS: readonly Scenario[] = [...debtScenarios, ...setScenarios];

/**
 * Limits changed at run time with each carry mode (docs/algorithms.md#live-limits): for a store
 * whose prepared policies have `changeLimits`, as the memory and Redis stores do.
 */
export const LIVE_LIMIT_SCENARIOS: readonly Scenario[] = liveLimitScenarios;

/**
 * Lease takes (docs/algorithms.md#quota-leases): for a store whose prepared policies have
 * `take`, as the memory and Redis stores do.
 */
export const LEASE_TAKE_SCENARIOS: readonly Scenario[] = leaseTakeScenarios;
