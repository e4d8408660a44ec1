/** The conformance scenarios of smoothBursty (docs/algorithms.md). */
import { SATURATED_WAIT_US, SMOOTH_BURSTY_RETENTION_US } from '../../algorithms/smooth-bursty.js';
import { fixedWindow, smoothBursty, smoothWarmingUp } from '../../index.js';
import { limitZeroScenario, type Scenario, type Step } from '../table.js';

/**
 * Guava's `acquire` as consume calls: at each time the request is admitted, and a second call
 * at the same instant is denied with retryAfter = the wait Guava's next acquire returns.
 * `waits` are Guava's R-values (ms) after the first request; returns the steps and the time
 * the last reservation ends.
 */
export function guavaAcquires(start: number, waits: number[], cost?: number): Step[] {
  const steps: Step[] = [];
  let at = start;
  for (const wait of waits) {
    steps.push({ at, cost, expect: { allowed: true, retryAfter: 0, delay: 0 } });
    steps.push({ at, cost, expect: { allowed: false, retryAfter: wait } });
    at += wait;
  }
  steps.push({ at, cost, expect: { allowed: true } });
  return steps;
}

const HOUR = SMOOTH_BURSTY_RETENTION_US / 1000;

/** smoothBursty scenarios of the conformance table. */
export const smoothBurstyScenarios: Scenario[] = [
  {
    // Guava RateLimiterTest.testSimple: R0.00, R0.20, R0.20
    name: 'smooth bursty: a 5/s limiter admits one request every 200 ms (Guava testSimple)',
    policies: () => [smoothBursty({ limit: 5, window: '1s' })],
    steps: [
      // A new key stores nothing: the first request is free now and pays 200 ms.
      { at: 0, expect: { allowed: true, limit: 5, remaining: 0, resetAfter: 1200 } },
      { at: 0, expect: { allowed: false, remaining: 0, retryAfter: 200, resetAfter: 1200 } },
      { at: 199.999, expect: { allowed: false, retryAfter: 0.001 } },
      ...guavaAcquires(200, [200, 200]),
    ],
  },
  {
    name: 'smooth bursty: after 5 s idle a 2/s limiter lets 3 through at once, the 4th waits 500 ms',
    policies: () => [smoothBursty({ limit: 2, window: '1s' })],
    steps: [
      { at: 0, expect: { allowed: true, remaining: 0 } },
      { at: 5000, cost: 0, expect: { allowed: true, remaining: 3, resetAfter: 0 } },
      { at: 5000, expect: { allowed: true, remaining: 2, resetAfter: 500 } },
      { at: 5000, expect: { allowed: true, remaining: 1, resetAfter: 1000 } },
      { at: 5000, expect: { allowed: true, remaining: 0, resetAfter: 1500 } },
      { at: 5000, expect: { allowed: false, retryAfter: 500, resetAfter: 1500 } },
      { at: 5000, op: 'peek', expect: { allowed: false, retryAfter: 500 } },
      { at: 5000, cost: 0, expect: { allowed: true, remaining: 0, retryAfter: 0 } },
      { at: 5500, expect: { allowed: true, remaining: 0, resetAfter: 1500 } },
    ],
  },
  {
    // Guava testOneSecondBurst: 1 + 1 + 3 + 1 from capacity at once, then R0.20
    name: 'smooth bursty: a full 5/s key serves 5 stored permits and one fresh at once (Guava testOneSecondBurst)',
    policies: () => [smoothBursty({ limit: 5, window: '1s' })],
    steps: [
      { at: 0 },
      { at: 2200, expect: { allowed: true, remaining: 5 } },
      { at: 2200, expect: { allowed: true, remaining: 4 } },
      { at: 2200, cost: 3, expect: { allowed: true, remaining: 1 } },
      { at: 2200, expect: { allowed: true, remaining: 0, resetAfter: 1200 } },
      { at: 2200, expect: { allowed: false, retryAfter: 200 } },
    ],
  },
  {
    // Guava testSimpleWeights: R0.00, R1.00, R1.00, R2.00, R4.00, R8.00 — never −1
    name: 'smooth bursty: any cost is admitted when free and the next request pays (Guava testSimpleWeights)',
    policies: () => [smoothBursty({ limit: 1, window: '1s', maxBurst: 0 })],
    steps: [
      { at: 0, expect: { allowed: true } },
      { at: 0, expect: { allowed: false, retryAfter: 1000 } },
      { at: 1000, expect: { allowed: true } },
      { at: 1000, cost: 2, expect: { allowed: false, retryAfter: 1000 } },
      { at: 2000, cost: 2, expect: { allowed: true, resetAfter: 2000 } },
      { at: 2000, cost: 4, expect: { allowed: false, retryAfter: 2000 } },
      { at: 4000, cost: 4, expect: { allowed: true } },
      { at: 4000, cost: 8, expect: { allowed: false, retryAfter: 4000 } },
      { at: 8000, cost: 8, expect: { allowed: true, remaining: 0, resetAfter: 8000 } },
      { at: 8000, expect: { allowed: false, retryAfter: 8000 } },
      // maxBurst 0 stores nothing: a long idle key is simply free.
      { at: 100_000, cost: 0, expect: { allowed: true, remaining: 1, resetAfter: 0 } },
      { at: 100_000, cost: 1_000_000, expect: { allowed: true, retryAfter: 0 } },
      { at: 100_000, expect: { allowed: false, retryAfter: 1_000_000_000 } },
    ],
  },
  {
    name: 'smooth bursty with a fixed window: one script, all-or-nothing; a denial charges neither',
    policies: () => [
      smoothBursty({ limit: 2, window: '1s' }),
      fixedWindow({ limit: 2, window: '1m' }),
    ],
    steps: [
      { at: 0, expect: { allowed: true, policies: [{ remaining: 0 }, { remaining: 1 }] } },
      { at: 500, expect: { allowed: true, policies: [{ remaining: 0 }, { remaining: 0 }] } },
      {
        at: 1000,
        expect: {
          allowed: false,
          policy: 'fixed-2-per-60s',
          retryAfter: 59_000,
          policies: [
            { allowed: true, remaining: 1, retryAfter: 0 },
            { allowed: false, retryAfter: 59_000 },
          ],
        },
      },
      // The bursty key was not charged: its free request is still there (charged, it would
      // have had to wait until 1500).
      { at: 1000, cost: 0, expect: { policies: [{ remaining: 1 }, { remaining: 0 }] } },
      {
        at: 61_000,
        cost: 2,
        expect: { allowed: true, policies: [{ remaining: 1 }, { remaining: 0 }] },
      },
    ],
  },
  {
    name: 'smooth bursty and warming up: a cost beyond exact arithmetic waits SATURATED_WAIT_US',
    policies: () => [
      smoothBursty({ limit: 1, window: '1s' }),
      smoothWarmingUp({ limit: 1, window: '1s', warmup: '1s' }),
    ],
    steps: [
      { at: 0, cost: Number.MAX_SAFE_INTEGER, expect: { allowed: true, retryAfter: 0 } },
      {
        at: 0,
        expect: {
          allowed: false,
          retryAfter: SATURATED_WAIT_US / 1000,
          policies: [
            { retryAfter: SATURATED_WAIT_US / 1000 },
            { retryAfter: SATURATED_WAIT_US / 1000 },
          ],
        },
      },
    ],
  },
  {
    name: 'smooth bursty: a full key is kept for the retention, then starts again like a new one',
    policies: () => [smoothBursty({ limit: 2, window: '1s', maxBurst: '2s' })],
    steps: [
      // Free at 500, full (4 stored) at 2500, kept until 2500 + retention.
      { at: 0, expect: { allowed: true, remaining: 0, resetAfter: 2500 } },
      { at: 2500 + HOUR - 0.001, cost: 0, expect: { remaining: 5 } },
      { at: 2500 + HOUR, cost: 0, expect: { remaining: 1, resetAfter: 2000 } },
      { at: 2500 + HOUR, expect: { allowed: true, remaining: 0, resetAfter: 2500 } },
      { at: 2500 + HOUR, op: 'reset' },
      { at: 2500 + HOUR, expect: { allowed: true, remaining: 0 } },
    ],
  },
  limitZeroScenario('smooth bursty', () =>
    smoothBursty({ limit: 0, window: '1s', maxBurst: '2s', blockDuration: '1m' }),
  ),
];
