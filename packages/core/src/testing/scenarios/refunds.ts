/** Refund scenarios per algorithm (docs/algorithms.md#refunds). */
import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../index.js';
import type { Scenario } from '../table.js';

/** Refunds per algorithm (docs/algorithms.md#refunds). */
export const refundScenarios: Scenario[] = [
  {
    name: 'refund fixedWindow: the current window only, never above the limit, never creating state',
    policies: () => [fixedWindow({ limit: 3, window: '1s' })],
    steps: [
      { at: 0, cost: 3, expect: { allowed: true, remaining: 0 } },
      { at: 100, op: 'refund', cost: 2, expect: { allowed: true, remaining: 2, resetAfter: 900 } },
      { at: 100, op: 'refund', cost: 5, expect: { allowed: true, remaining: 3, resetAfter: 0 } },
      { at: 100, cost: 3, expect: { allowed: true, remaining: 0 } },
      { at: 100, expect: { allowed: false, retryAfter: 900 } },
      { at: 1000, op: 'refund', cost: 1, expect: { allowed: true, remaining: 3, resetAfter: 0 } },
      { at: 1000, op: 'refund', key: 'nobody', expect: { remaining: 3, resetAfter: 0 } },
      { at: 1000, cost: 3, expect: { allowed: true, remaining: 0 } },
      { at: 1000, op: 'refund', cost: 0, expect: { allowed: true, remaining: 0 } },
    ],
  },
  {
    name: 'refund slidingLog: the newest entries leave the log',
    policies: () => [slidingLog({ limit: 3, window: '1s' })],
    steps: [
      { at: 0, expect: { allowed: true } },
      { at: 100, expect: { allowed: true } },
      { at: 200, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
      { at: 300, op: 'refund', expect: { remaining: 1, resetAfter: 800 } },
      { at: 300, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
      { at: 300, expect: { allowed: false, retryAfter: 700 } },
      { at: 300, op: 'refund', cost: 2, expect: { remaining: 2, resetAfter: 700 } },
      { at: 300, cost: 2, expect: { allowed: true, remaining: 0 } },
      { at: 300, op: 'refund', cost: 5, expect: { remaining: 3, resetAfter: 0 } },
      { at: 300, cost: 3, expect: { allowed: true, remaining: 0 } },
    ],
  },
  {
    name: 'refund tokenBucket: tokens come back, never above burst',
    policies: () => [tokenBucket({ limit: 10, window: '1s', burst: 5 })],
    steps: [
      { at: 0, cost: 5, expect: { allowed: true, remaining: 0, resetAfter: 500 } },
      { at: 0, op: 'refund', cost: 2, expect: { remaining: 2, resetAfter: 300 } },
      { at: 50, op: 'refund', cost: 10, expect: { remaining: 5, resetAfter: 0 } },
      { at: 50, cost: 5, expect: { allowed: true, remaining: 0, resetAfter: 500 } },
      { at: 100, op: 'refund', expect: { remaining: 1, resetAfter: 350 } },
    ],
  },
  {
    name: 'refund gcra: the TAT moves back, never before now',
    policies: () => [gcra({ limit: 10, window: '1s', burst: 3 })],
    steps: [
      { at: 0, cost: 3, expect: { allowed: true, remaining: 0, resetAfter: 300 } },
      { at: 0, op: 'refund', expect: { remaining: 1, resetAfter: 200 } },
      { at: 150, op: 'refund', cost: 5, expect: { remaining: 3, resetAfter: 0 } },
      { at: 150, cost: 3, expect: { allowed: true, remaining: 0, resetAfter: 300 } },
    ],
  },
  {
    name: 'refund slidingWindow: the current sub-window only',
    policies: () => [slidingWindow({ limit: 4, window: '1s', buckets: 2 })],
    steps: [
      { at: 0, cost: 2, expect: { allowed: true, remaining: 2, resetAfter: 1000 } },
      { at: 600, expect: { allowed: true, remaining: 1, resetAfter: 900 } },
      { at: 700, op: 'refund', cost: 5, expect: { remaining: 2, resetAfter: 300 } },
      { at: 1000, op: 'refund', expect: { remaining: 4, resetAfter: 0 } },
    ],
  },
  {
    name: 'refund leakyBucket: the excess drops, never below empty',
    policies: () => [leakyBucket({ limit: 10, window: '1s', burst: 2 })],
    steps: [
      { at: 0, cost: 3, expect: { allowed: true, remaining: 0, resetAfter: 300 } },
      { at: 0, op: 'refund', expect: { remaining: 1, resetAfter: 200 } },
      // Less than one request left to drain.
      { at: 50, op: 'refund', expect: { remaining: 2, resetAfter: 50 } },
      { at: 50, cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 250 } },
      { at: 60, expect: { allowed: false, retryAfter: 40 } },
      { at: 60, op: 'refund', cost: 9, expect: { remaining: 3, resetAfter: 0 } },
    ],
  },
  {
    name: 'refund smoothBursty: next-free moves back, never before now',
    policies: () => [smoothBursty({ limit: 10, window: '1s' })],
    steps: [
      { at: 0, cost: 3, expect: { allowed: true, remaining: 0, resetAfter: 1300 } },
      { at: 0, expect: { allowed: false, retryAfter: 300 } },
      { at: 0, op: 'refund', expect: { allowed: true, remaining: 0, resetAfter: 1200 } },
      { at: 100, op: 'refund', cost: 5, expect: { remaining: 1, resetAfter: 1000 } },
      { at: 100, expect: { allowed: true } },
    ],
  },
  {
    name: 'refund smoothWarmingUp: next-free moves back, never before now',
    policies: () => [smoothWarmingUp({ limit: 10, window: '1s', warmup: '1s', coldFactor: 1 })],
    steps: [
      { at: 0, expect: { allowed: true, remaining: 0, resetAfter: 166.667 } },
      { at: 0, expect: { allowed: false, retryAfter: 100 } },
      { at: 0, op: 'refund', expect: { remaining: 1, resetAfter: 66.667 } },
      { at: 0, expect: { allowed: true } },
    ],
  },
  {
    name: 'refund mixed: every policy gets the units back at once',
    policies: () => [
      fixedWindow({ limit: 2, window: '1s' }),
      slidingLog({ limit: 3, window: '1s' }),
      gcra({ limit: 4, window: '1s' }),
    ],
    steps: [
      { at: 0, cost: 2, expect: { allowed: true, remaining: 0 } },
      {
        at: 0,
        op: 'refund',
        expect: {
          allowed: true,
          policies: [{ remaining: 1 }, { remaining: 2 }, { remaining: 3, resetAfter: 250 }],
        },
      },
      { at: 0, expect: { allowed: true, policies: [{ remaining: 0 }, { remaining: 1 }, {}] } },
    ],
  },
];
