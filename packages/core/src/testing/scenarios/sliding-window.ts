/** The conformance scenarios of slidingWindow (docs/algorithms.md). */
import { fixedWindow, slidingWindow } from '../../index.js';
import { limitZeroScenario, type Scenario } from '../table.js';

/** slidingWindow scenarios of the conformance table. */
export const slidingWindowScenarios: Scenario[] = [
  {
    name: 'sliding window: the last `buckets` sub-windows are summed; the oldest leaves first',
    // Sub-windows of 250 ms: [0, 250) is sub-window 0, [250, 500) is 1, …
    policies: () => [slidingWindow({ limit: 4, window: '1s', buckets: 4 })],
    steps: [
      {
        at: 0,
        expect: {
          allowed: true,
          limit: 4,
          remaining: 3,
          resetAfter: 1000,
          policy: 'sliding-window-4-per-1s-buckets-4',
        },
      },
      { at: 100, expect: { allowed: true, remaining: 2, resetAfter: 900 } },
      // The newest count (sub-window 1) leaves when sub-window 5 starts, at 1250.
      { at: 300, expect: { allowed: true, remaining: 1, resetAfter: 950 } },
      { at: 600, expect: { allowed: true, remaining: 0, resetAfter: 900 } },
      // Sub-window 0 (two units) leaves at 1000.
      { at: 700, expect: { allowed: false, remaining: 0, resetAfter: 800, retryAfter: 300 } },
      { at: 999.999, expect: { allowed: false, retryAfter: 0.001 } },
      { at: 1000, expect: { allowed: true, remaining: 1, resetAfter: 1000 } },
      // Three units are in; two more wait for sub-window 1 (one unit) to leave at 1250.
      { at: 1000, cost: 2, expect: { allowed: false, remaining: 1, retryAfter: 250 } },
      { at: 1000, cost: 5, expect: { allowed: false, remaining: 1, retryAfter: -1 } },
      { at: 1250, cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
    ],
  },
  {
    name: 'sliding window: precision bound, 2x limit when a full sub-window slides out',
    policies: () => [slidingWindow({ limit: 4, window: '1s', buckets: 4 })],
    steps: [
      // The whole limit at the end of sub-window 0 …
      { at: 249, times: 4, expect: { allowed: true } },
      { at: 500, expect: { allowed: false, retryAfter: 500 } },
      { at: 999.999, expect: { allowed: false, retryAfter: 0.001 } },
      // … and again once it has left: 8 units in (249, 1000], 751 ms < window.
      { at: 1000, times: 4, expect: { allowed: true } },
      { at: 1000, expect: { allowed: false, retryAfter: 1000 } },
    ],
  },
  {
    name: 'sliding window: 1 bucket is a fixed window (same answers, same boundary burst)',
    policies: () => [
      slidingWindow({ limit: 3, window: '1s', buckets: 1 }),
      fixedWindow({ limit: 3, window: '1s' }),
    ],
    steps: [
      {
        at: 999,
        times: 3,
        expect: { allowed: true, policies: [{ allowed: true }, { allowed: true }] },
      },
      {
        at: 999,
        expect: {
          allowed: false,
          policies: [
            { allowed: false, remaining: 0, resetAfter: 1, retryAfter: 1 },
            { allowed: false, remaining: 0, resetAfter: 1, retryAfter: 1 },
          ],
        },
      },
      {
        at: 1000,
        times: 3,
        expect: { allowed: true, policies: [{ allowed: true }, { allowed: true }] },
      },
    ],
  },
  {
    name: 'sliding window: buckets default to 10; cost 0 and peek write nothing; reset empties it',
    policies: () => [slidingWindow({ limit: 2, window: '10s' })],
    steps: [
      {
        at: 0,
        cost: 0,
        expect: {
          allowed: true,
          limit: 2,
          remaining: 2,
          resetAfter: 0,
          policy: 'sliding-window-2-per-10s',
        },
      },
      { at: 0, op: 'peek', cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 10_000 } },
      { at: 1, expect: { allowed: true, remaining: 1, resetAfter: 9999 } },
      { at: 2, op: 'peek', cost: 2, expect: { allowed: false, remaining: 1, retryAfter: 9998 } },
      { at: 2, cost: 0, expect: { allowed: true, remaining: 1, resetAfter: 9998 } },
      { at: 3, op: 'reset' },
      { at: 3, cost: 2, expect: { allowed: true, remaining: 0 } },
    ],
  },
  {
    name: 'sliding window: a key read long after its last write decides like a missing key',
    policies: () => [slidingWindow({ limit: 3, window: '1s' })],
    steps: [
      { at: 0, cost: 3, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
      { at: 950, expect: { allowed: false, retryAfter: 50 } },
      { at: 1000, expect: { allowed: true, remaining: 2, resetAfter: 1000 } },
      // Sub-window 10 (one unit) is still in the window at 1950, gone at 2000.
      { at: 1950, cost: 3, expect: { allowed: false, remaining: 2, retryAfter: 50 } },
      { at: 3_600_000, cost: 0, expect: { allowed: true, remaining: 3, resetAfter: 0 } },
      { at: 3_600_000, cost: 3, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
    ],
  },
  limitZeroScenario('sliding window', () =>
    slidingWindow({ limit: 0, window: '1s', buckets: 4, blockDuration: '1m' }),
  ),
];
