/**
 * Live limits (docs/algorithms.md#live-limits): a limit changed for one key with each carry
 * mode, for every algorithm a carry is defined for, both ways (raised and lowered); a ttl that
 * lapses, clearLimit, several policies, and the monthly quota raised mid-month.
 */
import {
  fixedWindow,
  gcra,
  leakyBucket,
  type Policy,
  slidingLog,
  slidingWindow,
  smoothBursty,
  tokenBucket,
} from '../../index.js';
import type { Carry, LimitOverride } from '../../live-limits.js';
import type { Scenario, Step } from '../table.js';

/** Each algorithm at capacity 10 (name 'q'), and the override that makes it 20. */
const TEN_TO_TWENTY: Array<[string, () => Policy, LimitOverride]> = [
  [
    'fixedWindow',
    () => fixedWindow({ limit: 10, window: '1h', name: 'q' }),
    { policy: 'q', limit: 20 },
  ],
  [
    'slidingLog',
    () => slidingLog({ limit: 10, window: '1h', name: 'q' }),
    { policy: 'q', limit: 20 },
  ],
  [
    'slidingWindow',
    () => slidingWindow({ limit: 10, window: '1h', name: 'q' }),
    { policy: 'q', limit: 20 },
  ],
  [
    'tokenBucket',
    () => tokenBucket({ limit: 10, window: '1h', name: 'q' }),
    { policy: 'q', limit: 20 },
  ],
  ['gcra', () => gcra({ limit: 10, window: '1h', name: 'q' }), { policy: 'q', limit: 20 }],
  [
    'leakyBucket',
    () => leakyBucket({ limit: 10, window: '1h', burst: 9, name: 'q' }),
    { policy: 'q', limit: 20, burst: 19 },
  ],
];

/** Limit 10 → 20 with 5 used: remaining 5, 10, 15 and 20 (the carry modes' definition). */
const RAISED: Record<Carry, number> = { 'as-is': 5, proportional: 10, additive: 15, reset: 20 };
/** Limit 20 → 10 with 5 used (15 remaining): 10, 7 (2.5 used rounds up), 5 and 10. */
const LOWERED: Record<Carry, number> = { 'as-is': 10, proportional: 7, additive: 5, reset: 10 };

/** `used` units taken, the override set with `carry`, then exactly `left` more admitted. */
function change(
  used: number,
  override: LimitOverride,
  carry: Carry,
  left: number,
  limit: number,
): Step[] {
  return [
    { at: 0, times: used, expect: { allowed: true } },
    { at: 0, op: 'setLimit', override, carry },
    { at: 0, op: 'peek', cost: 0, expect: { allowed: true, limit, remaining: left } },
    ...(left > 0 ? [{ at: 0, times: left, expect: { allowed: true, limit } }] : []),
    { at: 0, expect: { allowed: false, limit, remaining: 0 } },
  ];
}

const carries: Carry[] = ['as-is', 'proportional', 'additive', 'reset'];

const raised: Scenario[] = TEN_TO_TWENTY.flatMap(([kind, policy, override]) =>
  carries.map(
    (carry): Scenario => ({
      name: `live limits: ${kind} 10 → 20 with 5 used, carry '${carry}' leaves ${RAISED[carry]}`,
      liveLimits: true,
      policies: () => [policy()],
      steps: change(5, override, carry, RAISED[carry], 20),
    }),
  ),
);

const lowered: Scenario[] = (
  [
    ['fixedWindow', () => fixedWindow({ limit: 20, window: '1h', name: 'q' })],
    ['tokenBucket', () => tokenBucket({ limit: 20, window: '1h', name: 'q' })],
    ['gcra', () => gcra({ limit: 20, window: '1h', name: 'q' })],
  ] as Array<[string, () => Policy]>
).flatMap(([kind, policy]) =>
  carries.map(
    (carry): Scenario => ({
      name: `live limits: ${kind} 20 → 10 with 5 used, carry '${carry}' leaves ${LOWERED[carry]}`,
      liveLimits: true,
      policies: () => [policy()],
      steps: change(5, { policy: 'q', limit: 10 }, carry, LOWERED[carry], 10),
    }),
  ),
);

/**
 * A monthly quota raised mid-month (envoyproxy/ratelimit #185): 800 of 1 000 used, the plan
 * goes to 2 000. 'additive' credits the 1 000 at once (1 200 left), 'reset' the whole month.
 */
const monthly: Scenario[] = (
  [
    ['additive', 1200],
    ['reset', 2000],
    ['proportional', 400],
    ['as-is', 200],
  ] as Array<[Carry, number]>
).map(([carry, left]) => ({
  name: `live limits: a monthly quota raised mid-month, carry '${carry}' leaves ${left}`,
  liveLimits: true,
  policies: () => [fixedWindow({ limit: 1000, window: '30d', name: 'month' })],
  steps: [
    { at: 0, cost: 800, expect: { allowed: true, remaining: 200, limit: 1000 } },
    { at: 1000, cost: 201, expect: { allowed: false, remaining: 200 } },
    { at: 2000, op: 'setLimit', override: { policy: 'month', limit: 2000 }, carry },
    { at: 2000, op: 'peek', cost: left, expect: { allowed: true, remaining: 0, limit: 2000 } },
    { at: 2000, op: 'peek', cost: left + 1, expect: { allowed: false, remaining: left } },
    { at: 3000, cost: left, expect: { allowed: true, remaining: 0, limit: 2000 } },
  ],
}));

const lifecycle: Scenario[] = [
  {
    name: 'live limits: an override with a ttl lapses back to the policy, carrying as it was set',
    liveLimits: true,
    policies: () => [fixedWindow({ limit: 10, window: '1h', name: 'q' })],
    steps: [
      { at: 0, times: 3, expect: { allowed: true } },
      // 7 left of 10; tightened to 5 for a minute keeping the 3 used: 2 left.
      { at: 0, op: 'setLimit', override: { policy: 'q', limit: 5 }, carry: 'additive', ttl: '1m' },
      { at: 10, op: 'peek', cost: 0, expect: { limit: 5, remaining: 2 } },
      { at: 20, expect: { allowed: true, limit: 5, remaining: 1 } },
      { at: 59_999, op: 'peek', cost: 0, expect: { limit: 5, remaining: 1 } },
      // Lapsed: back to 10 with the 4 used kept.
      { at: 60_000, op: 'peek', cost: 0, expect: { limit: 10, remaining: 6 } },
      { at: 60_001, times: 6, expect: { allowed: true, limit: 10 } },
      { at: 60_002, expect: { allowed: false, limit: 10 } },
    ],
  },
  {
    name: 'live limits: clearLimit goes back to the policy; a second setLimit replaces the first',
    liveLimits: true,
    policies: () => [tokenBucket({ limit: 10, window: '1h', name: 'q' })],
    steps: [
      { at: 0, times: 4, expect: { allowed: true } },
      { at: 0, op: 'setLimit', override: { policy: 'q', limit: 30 }, carry: 'additive' },
      { at: 0, op: 'peek', cost: 0, expect: { limit: 30, remaining: 26 } },
      { at: 0, op: 'setLimit', override: { policy: 'q', limit: 40 }, carry: 'additive' },
      { at: 0, op: 'peek', cost: 0, expect: { limit: 40, remaining: 36 } },
      { at: 0, op: 'clearLimit', carry: 'additive' },
      { at: 0, op: 'peek', cost: 0, expect: { limit: 10, remaining: 6 } },
      // Another key never saw an override.
      { at: 0, key: 'other', op: 'peek', cost: 0, expect: { limit: 10, remaining: 10 } },
    ],
  },
  {
    name: 'live limits: one policy of several overridden, the others keep their counts',
    liveLimits: true,
    policies: () => [
      fixedWindow({ limit: 5, window: '1s', name: 'second' }),
      fixedWindow({ limit: 100, window: '1h', name: 'hour' }),
    ],
    steps: [
      { at: 0, times: 3, expect: { allowed: true } },
      { at: 0, op: 'setLimit', override: { policy: 'hour', limit: 200 }, carry: 'proportional' },
      {
        at: 0,
        op: 'peek',
        cost: 0,
        expect: {
          policies: [
            { name: 'second', limit: 5, remaining: 2 },
            { name: 'hour', limit: 200, remaining: 194 },
          ],
        },
      },
      { at: 0, times: 2, expect: { allowed: true } },
      { at: 0, expect: { allowed: false, policy: 'second' } },
      { at: 1000, expect: { allowed: true, policies: [{ remaining: 4 }, { remaining: 191 }] } },
    ],
  },
  {
    name: "live limits: smoothBursty takes a new rate with carry 'reset'",
    liveLimits: true,
    policies: () => [smoothBursty({ limit: 10, window: '1s', name: 'q' })],
    steps: [
      { at: 0, expect: { allowed: true, limit: 10 } },
      { at: 0, expect: { allowed: false, retryAfter: 100 } },
      { at: 0, op: 'setLimit', override: { policy: 'q', limit: 20 }, carry: 'reset' },
      { at: 0, expect: { allowed: true, limit: 20 } },
      { at: 0, expect: { allowed: false, retryAfter: 50 } },
      { at: 50, expect: { allowed: true, limit: 20 } },
    ],
  },
];

/** Every live limits scenario (a store with `changeLimits`). */
export const liveLimitScenarios: Scenario[] = [...raised, ...lowered, ...monthly, ...lifecycle];
