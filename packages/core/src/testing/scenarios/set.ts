/**
 * `limiter.set(key, { used })`: each policy forgets the key's state and is charged `used` units
 * (docs/algorithms.md#set), past the capacity into debt; blocks are kept.
 */
import {
  fixedWindow,
  gcra,
  type Policy,
  slidingWindow,
  smoothBursty,
  tokenBucket,
} from '../../index.js';
import type { Scenario, Step } from '../table.js';

/**
 * The steps every refilling algorithm (one unit back per 100 ms, capacity 10) answers alike: set
 * replaces what was used, past the capacity is debt repaid by the refill, 0 empties the key, and
 * a block stays in force.
 */
const REFILLING: Step[] = [
  { at: 0, cost: 3, expect: { allowed: true, remaining: 7 } },
  // Not 3 + 4: the 3 are forgotten. The answer is a peek of cost 1, as penalize's.
  { at: 0, op: 'set', cost: 4, expect: { allowed: true, remaining: 5, resetAfter: 500 } },
  { at: 0, expect: { allowed: true, remaining: 5 } },
  // 12 used: 2 beyond the capacity, and a cost-1 request waits for 3 units to come back.
  { at: 0, op: 'set', cost: 12, expect: { allowed: false, remaining: 0, retryAfter: 300 } },
  { at: 299, expect: { allowed: false, retryAfter: 1 } },
  { at: 300, expect: { allowed: true, remaining: 0 } },
  { at: 300, op: 'set', cost: 0, expect: { allowed: true, remaining: 9, resetAfter: 100 } },
  // A block stays: set writes the count and answers blocked.
  { at: 1000, op: 'block', duration: '1s' },
  { at: 1000, op: 'set', cost: 2, expect: { allowed: false, reason: 'blocked' } },
  { at: 2000, op: 'peek', cost: 0, expect: { allowed: true, remaining: 10 } },
  { at: 2000, op: 'set', cost: 10, expect: { allowed: false, remaining: 0, retryAfter: 100 } },
];

/** REFILLING for `policy`. */
function refilling(name: string, policy: () => Policy): Scenario {
  return {
    name: `set ${name}: replaces the count, into debt past the capacity; blocks stay`,
    policies: () => [policy()],
    steps: REFILLING,
  };
}

export const setScenarios: Scenario[] = [
  refilling('tokenBucket', () => tokenBucket({ limit: 10, window: '1s' })),
  refilling('gcra', () => gcra({ limit: 10, window: '1s' })),
  {
    name: 'set fixedWindow: the current window holds `used`; past the limit the rest is owed by the next windows',
    policies: () => [fixedWindow({ limit: 10, window: '1s' })],
    steps: [
      { at: 100, cost: 3, expect: { remaining: 7 } },
      { at: 200, op: 'set', cost: 5, expect: { allowed: true, remaining: 4, resetAfter: 800 } },
      { at: 200, expect: { remaining: 4 } },
      { at: 300, op: 'set', cost: 15, expect: { allowed: false, remaining: 0, retryAfter: 700 } },
      // 15 used: 5 carried into the window of 1 s.
      { at: 1000, expect: { allowed: true, remaining: 4 } },
      { at: 1000, op: 'set', cost: 0, expect: { allowed: true, remaining: 9 } },
      { at: 1000, op: 'peek', cost: 0, expect: { remaining: 10, resetAfter: 0 } },
    ],
  },
  {
    name: "set fixedWindow anchor 'first-request': a set starts a window of its own",
    policies: () => [fixedWindow({ limit: 10, window: '1s', anchor: 'first-request' })],
    steps: [
      { at: 0, op: 'set', cost: 4, expect: { allowed: true, remaining: 5, resetAfter: 1000 } },
      { at: 500, expect: { remaining: 5, resetAfter: 500 } },
      { at: 600, op: 'set', cost: 2, expect: { allowed: true, remaining: 7, resetAfter: 1000 } },
      { at: 1599, expect: { remaining: 7, resetAfter: 1 } },
      { at: 1600, expect: { remaining: 9, resetAfter: 1000 } },
    ],
  },
  {
    name: 'set fixedWindow, a limit kept per window key',
    policies: () => [fixedWindow({ limit: 2_000_000, window: '1s' })],
    steps: [
      { at: 0, cost: 5, expect: { remaining: 1_999_995 } },
      { at: 250, op: 'set', cost: 1_500_000, expect: { allowed: true, remaining: 499_999 } },
      { at: 1000, expect: { allowed: true, remaining: 1_999_999 } },
    ],
  },
  {
    name: 'set slidingWindow: `used` in the current sub-window, sliding out a window later',
    policies: () => [slidingWindow({ limit: 10, window: '1s' })],
    steps: [
      { at: 0, cost: 5, expect: { remaining: 5 } },
      { at: 250, op: 'set', cost: 3, expect: { allowed: true, remaining: 6, resetAfter: 950 } },
      { at: 250, op: 'set', cost: 12, expect: { allowed: false, remaining: 0, retryAfter: 950 } },
      { at: 1199, expect: { allowed: false, retryAfter: 1 } },
      { at: 1200, expect: { allowed: true, remaining: 9 } },
    ],
  },
  {
    name: 'set smoothBursty: a fresh key granted `used` permits at once, the next request pays',
    policies: () => [smoothBursty({ limit: 10, window: '1s' })],
    steps: [
      { at: 0, op: 'set', cost: 5, expect: { allowed: false, retryAfter: 500 } },
      { at: 499, expect: { allowed: false, retryAfter: 1 } },
      { at: 500, expect: { allowed: true } },
    ],
  },
  {
    name: 'set with two policies: each forgets its state and holds `used`',
    policies: () => [
      tokenBucket({ limit: 10, window: '1s', name: 'tb' }),
      fixedWindow({ limit: 5, window: '1m', name: 'fw' }),
    ],
    steps: [
      { at: 0, cost: 2, expect: { policies: [{ remaining: 8 }, { remaining: 3 }] } },
      {
        at: 0,
        op: 'set',
        cost: 4,
        expect: { allowed: true, policies: [{ remaining: 5 }, { remaining: 0 }] },
      },
      {
        at: 0,
        op: 'set',
        cost: 7,
        expect: { allowed: false, policy: 'fw', policies: [{ remaining: 3 }, { remaining: 0 }] },
      },
      { at: 60_000, expect: { allowed: true, policies: [{ remaining: 9 }, { remaining: 2 }] } },
    ],
  },
];
