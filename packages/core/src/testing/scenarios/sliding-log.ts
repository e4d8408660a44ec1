/** The conformance scenarios of slidingLog (docs/algorithms.md). */
import { slidingLog } from '../../index.js';
import { limitZeroScenario, type Scenario } from '../table.js';

/** slidingLog scenarios of the conformance table. */
export const slidingLogScenarios: Scenario[] = [
  {
    name: 'sliding log: exact over any window, retry when the oldest unit leaves',
    policies: () => [slidingLog({ limit: 3, window: '1s' })],
    steps: [
      { at: 0, expect: { allowed: true, limit: 3, remaining: 2, resetAfter: 1000 } },
      { at: 100, expect: { allowed: true, remaining: 1, resetAfter: 1000 } },
      { at: 200, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
      { at: 300, expect: { allowed: false, remaining: 0, resetAfter: 900, retryAfter: 700 } },
      { at: 999.999, expect: { allowed: false, retryAfter: 0.001 } },
      // The unit admitted at 0 leaves the window (now − 1s, now] exactly at 1000.
      { at: 1000, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
      {
        at: 1050,
        cost: 2,
        expect: { allowed: false, remaining: 0, retryAfter: 150, resetAfter: 950 },
      },
      { at: 1200, cost: 2, expect: { allowed: true, remaining: 0 } },
      { at: 1200, cost: 4, expect: { allowed: false, retryAfter: -1 } },
    ],
  },
  {
    name: 'sliding log: no 2x burst across a window edge',
    policies: () => [slidingLog({ limit: 3, window: '1s' })],
    steps: [
      { at: 999, times: 3, expect: { allowed: true } },
      { at: 1000, expect: { allowed: false, retryAfter: 999 } },
      { at: 1999, times: 3, expect: { allowed: true } },
    ],
  },
  {
    name: 'sliding log: cost 0 and peek write nothing; reset empties the log',
    policies: () => [slidingLog({ limit: 2, window: '10s' })],
    steps: [
      { at: 0, cost: 0, expect: { allowed: true, remaining: 2, resetAfter: 0 } },
      { at: 0, op: 'peek', cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 10_000 } },
      { at: 1, expect: { allowed: true, remaining: 1 } },
      { at: 2, op: 'peek', cost: 2, expect: { allowed: false, remaining: 1, retryAfter: 9999 } },
      { at: 3, op: 'reset' },
      { at: 3, cost: 2, expect: { allowed: true, remaining: 0 } },
    ],
  },
  limitZeroScenario('sliding log', () =>
    slidingLog({ limit: 0, window: '1s', blockDuration: '1m' }),
  ),
];
