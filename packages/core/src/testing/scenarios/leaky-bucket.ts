/** The conformance scenarios of leakyBucket (docs/algorithms.md). */
import { fixedWindow, gcra, leakyBucket } from '../../index.js';
import { limitZeroScenario, type Scenario } from '../table.js';

/** leakyBucket scenarios of the conformance table. */
export const leakyBucketScenarios: Scenario[] = [
  {
    // nginx docs: `rate=1r/s; limit_req zone=one burst=5;` (no nodelay: every excess request
    // is delayed) — 1 request passes, 5 wait 1 s, 2 s … 5 s, the next is rejected.
    name: 'leaky bucket: nginx `rate=1r/s burst=5` delays excess requests to the rate',
    policies: () => [leakyBucket({ limit: 1, window: '1s', burst: 5, delay: 0 })],
    steps: [
      {
        at: 0,
        expect: {
          allowed: true,
          limit: 6,
          remaining: 5,
          resetAfter: 1000,
          delay: 0,
          policy: 'leaky-bucket-1-per-1s-burst-5-delay-0',
        },
      },
      { at: 0, expect: { allowed: true, remaining: 4, resetAfter: 2000, delay: 1000 } },
      { at: 0, expect: { allowed: true, remaining: 3, delay: 2000 } },
      { at: 0, expect: { allowed: true, remaining: 2, delay: 3000 } },
      { at: 0, expect: { allowed: true, remaining: 1, delay: 4000 } },
      { at: 0, expect: { allowed: true, remaining: 0, resetAfter: 6000, delay: 5000 } },
      // Rejected requests are not recorded.
      {
        at: 0,
        times: 3,
        expect: { allowed: false, remaining: 0, resetAfter: 6000, retryAfter: 1000, delay: 0 },
      },
      { at: 1000, expect: { allowed: true, remaining: 0, resetAfter: 6000, delay: 5000 } },
      { at: 1500, expect: { allowed: false, retryAfter: 500 } },
    ],
  },
  {
    // nginx blog "Rate Limiting with NGINX": `rate=5r/s; limit_req zone=ip burst=12 delay=8;`
    // — the first 8 excess requests pass at once, the next 4 are delayed to 5 r/s, the rest
    // rejected.
    name: 'leaky bucket: nginx `rate=5r/s burst=12 delay=8` (two-stage limiting)',
    policies: () => [leakyBucket({ limit: 5, window: '1s', burst: 12, delay: 8 })],
    steps: [
      { at: 0, expect: { allowed: true, limit: 13, remaining: 12, delay: 0 } },
      { at: 0, times: 8, expect: { allowed: true, delay: 0 } },
      { at: 0, expect: { allowed: true, remaining: 3, delay: 200 } },
      { at: 0, expect: { allowed: true, remaining: 2, delay: 400 } },
      { at: 0, expect: { allowed: true, remaining: 1, delay: 600 } },
      { at: 0, expect: { allowed: true, remaining: 0, delay: 800, resetAfter: 2600 } },
      { at: 0, expect: { allowed: false, retryAfter: 200, delay: 0 } },
      // 1.5 requests have drained: this one's excess is 11.5, so it waits (11.5 - 8) / 5 s.
      { at: 300, expect: { allowed: true, remaining: 0, delay: 700 } },
    ],
  },
  {
    name: 'leaky bucket: `delay` omitted is nginx `nodelay` (police: pass or reject, never wait)',
    policies: () => [leakyBucket({ limit: 10, window: '1s', burst: 2 })],
    steps: [
      { at: 0, expect: { allowed: true, limit: 3, remaining: 2, resetAfter: 100, delay: 0 } },
      { at: 0, expect: { allowed: true, remaining: 1, delay: 0 } },
      { at: 0, expect: { allowed: true, remaining: 0, resetAfter: 300, delay: 0 } },
      { at: 0, expect: { allowed: false, remaining: 0, resetAfter: 300, retryAfter: 100 } },
      { at: 50, expect: { allowed: false, resetAfter: 250, retryAfter: 50 } },
      { at: 100, expect: { allowed: true, remaining: 0, resetAfter: 300, delay: 0 } },
      // Excess drains continuously: 1.5 requests have left by 250.
      { at: 250, expect: { allowed: true, remaining: 0, resetAfter: 250, delay: 0 } },
      { at: 250, expect: { allowed: false, retryAfter: 50 } },
      { at: 250, cost: 4, expect: { allowed: false, retryAfter: -1 } },
      { at: 10_000, cost: 3, expect: { allowed: true, remaining: 0, resetAfter: 300 } },
    ],
  },
  {
    name: 'leaky bucket: burst defaults to 0 (one request per interval); cost 0, peek and reset',
    policies: () => [leakyBucket({ limit: 2, window: '1s' })],
    steps: [
      {
        at: 0,
        cost: 0,
        expect: {
          allowed: true,
          limit: 1,
          remaining: 1,
          resetAfter: 0,
          policy: 'leaky-bucket-2-per-1s',
        },
      },
      { at: 0, op: 'peek', expect: { allowed: true, remaining: 0, resetAfter: 500 } },
      { at: 0, expect: { allowed: true, remaining: 0, resetAfter: 500 } },
      { at: 0, expect: { allowed: false, retryAfter: 500 } },
      { at: 250, expect: { allowed: false, retryAfter: 250, resetAfter: 250 } },
      { at: 499.999, expect: { allowed: false, retryAfter: 0.001 } },
      { at: 500, cost: 0, expect: { allowed: true, remaining: 1, resetAfter: 0 } },
      { at: 500, expect: { allowed: true, remaining: 0 } },
      { at: 500, op: 'reset' },
      { at: 500, expect: { allowed: true, remaining: 0 } },
    ],
  },
  {
    // 3 per second: one request is 1_000_000 units draining 3 per µs, so a request drains
    // after 333_333.33… µs. nginx would truncate to whole milliseconds; here it stays exact.
    name: 'leaky bucket: a rate that does not divide the window drains exactly (3 per 1s)',
    policies: () => [leakyBucket({ limit: 3, window: '1s', burst: 1 })],
    steps: [
      { at: 0, cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 666.667 } },
      { at: 333.333, expect: { allowed: false, retryAfter: 0.001, resetAfter: 333.334 } },
      { at: 333.334, cost: 0, expect: { allowed: true, remaining: 1, resetAfter: 333.333 } },
      // Idle again exactly at 666_667 µs (the first rounded-up µs after 2_000_000 / 3).
      { at: 666.667, cost: 0, expect: { allowed: true, remaining: 2, resetAfter: 0 } },
      { at: 666.667, expect: { allowed: true, remaining: 1, resetAfter: 333.334 } },
      { at: 666.667, expect: { allowed: true, remaining: 0, resetAfter: 666.667 } },
    ],
  },
  {
    name: 'leaky bucket: cost c is c requests arriving together, all or none',
    policies: () => [leakyBucket({ limit: 1, window: '1s', burst: 3, delay: 1 })],
    steps: [
      // Excess 2 after three requests: one above `delay`, so it waits one interval.
      { at: 0, cost: 3, expect: { allowed: true, remaining: 1, resetAfter: 3000, delay: 1000 } },
      { at: 0, cost: 2, expect: { allowed: false, remaining: 1, retryAfter: 1000 } },
      { at: 0, cost: 5, expect: { allowed: false, retryAfter: -1 } },
      { at: 0, expect: { allowed: true, remaining: 0, resetAfter: 4000, delay: 2000 } },
      // An idle bucket takes burst + 1 = 4 at once.
      { at: 60_000, cost: 4, expect: { allowed: true, remaining: 0, delay: 2000 } },
    ],
  },
  {
    name: 'leaky bucket: nodelay admits exactly like gcra with burst + 1',
    policies: () => [
      leakyBucket({ limit: 4, window: '1s', burst: 2 }),
      gcra({ limit: 4, window: '1s', burst: 3 }),
    ],
    steps: [
      { at: 0, times: 2, expect: { allowed: true } },
      { at: 0, expect: { allowed: true, policies: [{ remaining: 0 }, { remaining: 0 }] } },
      {
        at: 100,
        expect: {
          allowed: false,
          policies: [
            { allowed: false, retryAfter: 150, resetAfter: 650 },
            { allowed: false, retryAfter: 150, resetAfter: 650 },
          ],
        },
      },
      { at: 250, expect: { allowed: true } },
      {
        at: 300,
        expect: {
          allowed: false,
          policies: [
            { allowed: false, retryAfter: 200 },
            { allowed: false, retryAfter: 200 },
          ],
        },
      },
    ],
  },
  {
    name: 'leaky bucket with other policies: the longest delay wins; a denial leaves it untouched',
    policies: () => [
      leakyBucket({ limit: 10, window: '1s', burst: 4, delay: 0, name: 'shape' }),
      fixedWindow({ limit: 3, window: '1m' }),
    ],
    steps: [
      { at: 0, expect: { allowed: true, delay: 0 } },
      { at: 0, expect: { allowed: true, delay: 100, policies: [{ delay: 100 }, { delay: 0 }] } },
      {
        at: 0,
        expect: { allowed: true, delay: 200, policies: [{ remaining: 2 }, { remaining: 0 }] },
      },
      {
        at: 0,
        expect: {
          allowed: false,
          delay: 0,
          policy: 'fixed-3-per-60s',
          policies: [
            { allowed: true, remaining: 2, delay: 0, resetAfter: 300 },
            { allowed: false, retryAfter: 60_000 },
          ],
        },
      },
      {
        at: 60_000,
        expect: { allowed: true, delay: 0, policies: [{ remaining: 4 }, { remaining: 2 }] },
      },
    ],
  },
  limitZeroScenario('leaky bucket', () =>
    leakyBucket({ limit: 0, window: '1s', burst: 2, delay: 1, blockDuration: '1m' }),
  ),
];
