/**
 * Lease takes (Lua mode '9', docs/algorithms.md#quota-leases): up to `cost` units of a key in
 * one atomic call, the grant the least room any policy has (at most the units asked), charged
 * as a consume of that many; nothing when a policy has no room (the answer then a denied
 * consume of cost 1) or the key is blocked; never a lockout.
 */
import { fixedWindow, gcra, slidingWindow, tokenBucket } from '../../index.js';
import type { Scenario } from '../table.js';

export const leaseTakeScenarios: Scenario[] = [
  {
    name: 'lease take, fixedWindow: the room left, at most the units asked; none once full',
    policies: () => [fixedWindow({ limit: 10, window: '1s' })],
    steps: [
      {
        at: 0,
        op: 'take',
        cost: 4,
        expect: { granted: 4, allowed: true, remaining: 6, resetAfter: 1000 },
      },
      {
        at: 100,
        op: 'take',
        cost: 8,
        expect: { granted: 6, allowed: true, remaining: 0, resetAfter: 900 },
      },
      {
        at: 200,
        op: 'take',
        cost: 1,
        expect: { granted: 0, allowed: false, remaining: 0, retryAfter: 800 },
      },
      { at: 300, expect: { allowed: false, retryAfter: 700 } },
      { at: 1000, op: 'take', cost: 3, expect: { granted: 3, allowed: true, remaining: 7 } },
    ],
  },
  {
    name: 'lease take, slidingWindow: charged to the current sub-window',
    policies: () => [slidingWindow({ limit: 10, window: '1s', buckets: 10 })],
    steps: [
      { at: 50, op: 'take', cost: 6, expect: { granted: 6, remaining: 4, resetAfter: 950 } },
      { at: 150, op: 'take', cost: 10, expect: { granted: 4, remaining: 0, resetAfter: 950 } },
      // The 6 of sub-window 0 leave the window at 1 s.
      { at: 160, op: 'take', cost: 2, expect: { granted: 0, allowed: false, retryAfter: 840 } },
      { at: 1000, op: 'take', cost: 10, expect: { granted: 6, remaining: 0 } },
    ],
  },
  {
    name: 'lease take, tokenBucket: whole tokens in the bucket',
    policies: () => [tokenBucket({ limit: 10, window: '1s' })],
    steps: [
      { at: 0, op: 'take', cost: 7, expect: { granted: 7, remaining: 3, resetAfter: 700 } },
      { at: 0, op: 'take', cost: 5, expect: { granted: 3, remaining: 0, resetAfter: 1000 } },
      { at: 150, op: 'take', cost: 5, expect: { granted: 1, remaining: 0, resetAfter: 950 } },
      { at: 150, op: 'take', cost: 5, expect: { granted: 0, allowed: false, retryAfter: 50 } },
    ],
  },
  {
    name: 'lease take, gcra: whole emission intervals of the burst',
    policies: () => [gcra({ limit: 10, window: '1s', burst: 5 })],
    steps: [
      { at: 0, op: 'take', cost: 3, expect: { granted: 3, remaining: 2, resetAfter: 300 } },
      { at: 0, op: 'take', cost: 9, expect: { granted: 2, remaining: 0, resetAfter: 500 } },
      { at: 0, op: 'take', cost: 1, expect: { granted: 0, allowed: false, retryAfter: 100 } },
      { at: 250, op: 'take', cost: 9, expect: { granted: 2, remaining: 0, resetAfter: 450 } },
    ],
  },
  {
    name: 'lease take, several policies: the least room, charged to every one of them',
    policies: () => [
      fixedWindow({ limit: 10, window: '1s' }),
      gcra({ limit: 10, window: '1s', burst: 4 }),
    ],
    steps: [
      {
        at: 0,
        op: 'take',
        cost: 8,
        expect: { granted: 4, allowed: true, policies: [{ remaining: 6 }, { remaining: 0 }] },
      },
      {
        at: 0,
        op: 'take',
        cost: 8,
        expect: {
          granted: 0,
          allowed: false,
          policies: [
            { allowed: true, remaining: 6 },
            { allowed: false, retryAfter: 100 },
          ],
        },
      },
      { at: 0, op: 'peek', cost: 0, expect: { policies: [{ remaining: 6 }, { remaining: 0 }] } },
    ],
  },
  {
    name: 'lease take: a blocked key grants nothing, and a take denied starts no lockout',
    policies: () => [fixedWindow({ limit: 2, window: '1s', blockDuration: '1m' })],
    steps: [
      { at: 0, op: 'take', cost: 5, expect: { granted: 2, remaining: 0 } },
      { at: 10, op: 'take', cost: 1, expect: { granted: 0, allowed: false, retryAfter: 990 } },
      { at: 1000, expect: { allowed: true, reason: undefined } },
      { at: 1000, op: 'block', duration: '10s' },
      { at: 1100, op: 'take', cost: 1, expect: { granted: 0, allowed: false, reason: 'blocked' } },
    ],
  },
];
