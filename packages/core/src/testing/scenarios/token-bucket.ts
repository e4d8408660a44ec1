/** The conformance scenarios of tokenBucket (docs/algorithms.md). */
import { tokenBucket } from '../../index.js';
import { limitZeroScenario, type Scenario } from '../table.js';

/** tokenBucket scenarios of the conformance table. */
export const tokenBucketScenarios: Scenario[] = [
  {
    name: 'token bucket: starts full with exactly `burst` tokens, refills continuously',
    policies: () => [tokenBucket({ limit: 10, window: '1s', burst: 5 })],
    steps: [
      { at: 0, expect: { allowed: true, limit: 5, remaining: 4, resetAfter: 100 } },
      { at: 0, times: 3 },
      { at: 0, expect: { allowed: true, remaining: 0, resetAfter: 500 } },
      { at: 0, expect: { allowed: false, remaining: 0, resetAfter: 500, retryAfter: 100 } },
      { at: 100, expect: { allowed: true, remaining: 0, resetAfter: 500 } },
      // 1.5 tokens at 250: one is taken, half a token stays.
      { at: 250, expect: { allowed: true, remaining: 0, resetAfter: 450 } },
      { at: 250, expect: { allowed: false, retryAfter: 50 } },
      { at: 250, cost: 6, expect: { allowed: false, retryAfter: -1 } },
      { at: 10_000, cost: 5, expect: { allowed: true, remaining: 0, resetAfter: 500 } },
    ],
  },
  {
    name: 'token bucket: rates that do not divide the window stay exact (3 per 1s)',
    policies: () => [tokenBucket({ limit: 3, window: '1s' })],
    steps: [
      { at: 0, times: 3, expect: { allowed: true } },
      { at: 0, expect: { allowed: false, retryAfter: 333.334 } },
      { at: 333.333, expect: { allowed: false, retryAfter: 0.001 } },
      { at: 333.334, expect: { allowed: true, remaining: 0 } },
      // Three tokens take exactly one second to come back.
      { at: 1333.334, cost: 3, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
    ],
  },
  {
    name: 'token bucket: burst defaults to limit; cost 0 and peek write nothing',
    policies: () => [tokenBucket({ limit: 2, window: '1m' })],
    steps: [
      { at: 0, cost: 0, expect: { allowed: true, limit: 2, remaining: 2, resetAfter: 0 } },
      { at: 0, op: 'peek', cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 60_000 } },
      { at: 0, expect: { allowed: true, remaining: 1, resetAfter: 30_000 } },
      { at: 0, op: 'reset' },
      { at: 0, cost: 2, expect: { allowed: true, remaining: 0 } },
    ],
  },
  limitZeroScenario('token bucket', () =>
    tokenBucket({ limit: 0, window: '1s', burst: 20, blockDuration: '1m' }),
  ),
];
