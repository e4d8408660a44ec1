/** Scenarios of limiters with several policies: all-or-nothing, the deciding policy. */
import { fixedWindow, gcra, slidingLog, tokenBucket } from '../../index.js';
import type { Scenario } from '../table.js';

/** Limiters with several policies: all-or-nothing, and who speaks for the decision. */
export const multiPolicyScenarios: Scenario[] = [
  {
    name: 'multi: 1 per second and 5 per minute (DESIGN §3); a denial by one leaves the other untouched',
    policies: () => [
      fixedWindow({ limit: 1, window: '1s' }),
      fixedWindow({ limit: 5, window: '1m' }),
    ],
    steps: [
      {
        at: 0,
        expect: {
          allowed: true,
          policy: 'fixed-1-per-1s',
          remaining: 0,
          policies: [
            { name: 'fixed-1-per-1s', allowed: true, remaining: 0 },
            { name: 'fixed-5-per-60s', allowed: true, remaining: 4, resetAfter: 60_000 },
          ],
        },
      },
      {
        at: 500,
        expect: {
          allowed: false,
          policy: 'fixed-1-per-1s',
          retryAfter: 500,
          policies: [
            { allowed: false, remaining: 0, retryAfter: 500 },
            { allowed: true, remaining: 4, retryAfter: 0 },
          ],
        },
      },
      { at: 1000, expect: { allowed: true, policies: [{ remaining: 0 }, { remaining: 3 }] } },
      { at: 2000, expect: { allowed: true } },
      { at: 3000, expect: { allowed: true } },
      { at: 4000, expect: { allowed: true, policy: 'fixed-5-per-60s', remaining: 0 } },
      {
        at: 5000,
        expect: {
          allowed: false,
          policy: 'fixed-5-per-60s',
          retryAfter: 55_000,
          policies: [{ allowed: true, remaining: 1 }, { allowed: false }],
        },
      },
    ],
  },
  {
    name: 'multi: mixed algorithms in one script; the longest wait decides a denial',
    policies: () => [
      gcra({ limit: 10, window: '1s', burst: 3 }),
      tokenBucket({ limit: 1, window: '1s', burst: 2, name: 'slow' }),
      slidingLog({ limit: 100, window: '1h' }),
    ],
    steps: [
      { at: 0, times: 2, expect: { allowed: true } },
      {
        at: 0,
        expect: {
          allowed: false,
          policy: 'slow',
          retryAfter: 1000,
          policies: [
            { allowed: true, remaining: 1 },
            { allowed: false, remaining: 0, retryAfter: 1000 },
            { allowed: true, remaining: 98 },
          ],
        },
      },
      {
        at: 1000,
        expect: {
          allowed: true,
          policies: [{ remaining: 2 }, { remaining: 0 }, { remaining: 97 }],
        },
      },
      { at: 1000, cost: 3, expect: { allowed: false, retryAfter: -1, policy: 'slow' } },
      { at: 1000, op: 'reset' },
      {
        at: 1000,
        cost: 2,
        expect: {
          allowed: true,
          policies: [{ remaining: 1 }, { remaining: 0 }, { remaining: 98 }],
        },
      },
    ],
  },
  {
    name: 'multi: same kind twice runs the one-kind script with two policies',
    policies: () => [
      gcra({ limit: 2, window: '1s' }),
      gcra({ limit: 3, window: '1s', name: 'wide' }),
    ],
    steps: [
      { at: 0, times: 2, expect: { allowed: true } },
      {
        at: 0,
        expect: {
          allowed: false,
          policy: 'gcra-2-per-1s',
          policies: [{ allowed: false }, { allowed: true, remaining: 1 }],
        },
      },
    ],
  },
  {
    name: 'multi: the same fixed window from the clock and from the first request keep apart',
    policies: () => [
      fixedWindow({ limit: 2, window: '1s' }),
      fixedWindow({ limit: 2, window: '1s', anchor: 'first-request' }),
    ],
    steps: [
      {
        at: 500,
        times: 2,
        expect: {
          allowed: true,
          policies: [
            { name: 'fixed-2-per-1s', resetAfter: 500 },
            { name: 'fixed-2-per-1s-first-request', resetAfter: 1000 },
          ],
        },
      },
      {
        at: 600,
        expect: { allowed: false, policy: 'fixed-2-per-1s-first-request', retryAfter: 900 },
      },
      {
        at: 1000,
        expect: {
          allowed: false,
          retryAfter: 500,
          policies: [
            { allowed: true, remaining: 2, resetAfter: 0 },
            { allowed: false, remaining: 0, retryAfter: 500 },
          ],
        },
      },
      {
        at: 1500,
        expect: {
          allowed: true,
          policies: [
            { remaining: 1, resetAfter: 500 },
            { remaining: 1, resetAfter: 1000 },
          ],
        },
      },
    ],
  },
  {
    name: 'multi: a policy switched off (limit 0) denies for good; the others are not charged',
    policies: () => [
      fixedWindow({ limit: 2, window: '1s', name: 'open' }),
      gcra({ limit: 0, window: '1s', name: 'maintenance', blockDuration: '1m' }),
    ],
    steps: [
      {
        at: 0,
        times: 3,
        expect: {
          allowed: false,
          policy: 'maintenance',
          limit: 0,
          retryAfter: -1,
          policies: [
            { allowed: true, remaining: 2, resetAfter: 0, limit: 2 },
            { allowed: false, remaining: 0, retryAfter: -1, limit: 0 },
          ],
        },
      },
      {
        at: 0,
        cost: 0,
        expect: {
          allowed: true,
          reason: undefined,
          policies: [{ remaining: 2 }, { allowed: true, remaining: 0 }],
        },
      },
    ],
  },
];
