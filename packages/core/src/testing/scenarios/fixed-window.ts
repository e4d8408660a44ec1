/** The conformance scenarios of fixedWindow (docs/algorithms.md). */
import { fixedWindow } from '../../index.js';
import { limitZeroScenario, type Scenario } from '../table.js';

/** fixedWindow scenarios of the conformance table. */
export const fixedWindowScenarios: Scenario[] = [
  {
    name: "fixed window extendWindow 'on-denial': a denied hit pushes the window's end out",
    policies: () => [fixedWindow({ limit: 2, window: '1s', extendWindow: 'on-denial' })],
    steps: [
      { at: 0, expect: { allowed: true, remaining: 1, resetAfter: 1000 } },
      { at: 100, expect: { allowed: true, remaining: 0, resetAfter: 900 } },
      // Denied: the window (which would end at 1000) now ends at 1500.
      { at: 500, expect: { allowed: false, remaining: 0, resetAfter: 1000, retryAfter: 1000 } },
      // A peek answers what a consume would, and moves nothing.
      { at: 900, op: 'peek', expect: { allowed: false, retryAfter: 1000 } },
      { at: 900, cost: 0, expect: { allowed: true, remaining: 0, resetAfter: 600 } },
      { at: 1200, expect: { allowed: false, retryAfter: 1000 } },
      { at: 2199.999, cost: 0, expect: { remaining: 0, resetAfter: 0.001 } },
      { at: 2200, expect: { allowed: true, remaining: 1, resetAfter: 1000 } },
      // A cost it can never admit is no hit that extends.
      { at: 2300, cost: 3, expect: { allowed: false, remaining: 1, retryAfter: -1 } },
      { at: 2300, cost: 0, expect: { allowed: true, remaining: 1, resetAfter: 900 } },
    ],
  },
  {
    name: "fixed window extendWindow 'on-hit': every hit pushes the window's end out",
    policies: () => [fixedWindow({ limit: 2, window: '1s', extendWindow: 'on-hit' })],
    steps: [
      { at: 0, expect: { allowed: true, remaining: 1, resetAfter: 1000 } },
      { at: 600, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
      { at: 1200, expect: { allowed: false, remaining: 0, retryAfter: 1000 } },
      { at: 2100, expect: { allowed: false, retryAfter: 1000 } },
      { at: 3100, expect: { allowed: true, remaining: 1, resetAfter: 1000 } },
      { at: 3100, op: 'peek', expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
      { at: 3200, cost: 0, expect: { allowed: true, remaining: 1, resetAfter: 900 } },
    ],
  },
  {
    name: 'fixed window extendWindow beside another policy: only a denial of its own moves it',
    policies: () => [
      fixedWindow({ limit: 2, window: '1s', extendWindow: 'on-denial', name: 'extending' }),
      fixedWindow({ limit: 1, window: '10s', name: 'strict' }),
    ],
    steps: [
      { at: 0, expect: { allowed: true } },
      // Denied by 'strict' alone: 'extending' admitted on its own and is left as it was.
      {
        at: 500,
        expect: { allowed: false, policy: 'strict', policies: [{ resetAfter: 500 }, {}] },
      },
      { at: 1000, cost: 0, expect: { policies: [{ remaining: 2, resetAfter: 0 }, {}] } },
    ],
  },
  {
    name: 'fixed window: limit per aligned window, denial until the window ends',
    policies: () => [fixedWindow({ limit: 3, window: '1s' })],
    steps: [
      {
        at: 0,
        expect: { allowed: true, limit: 3, remaining: 2, resetAfter: 1000, retryAfter: 0 },
      },
      { at: 100, expect: { allowed: true, remaining: 1, resetAfter: 900 } },
      { at: 200, expect: { allowed: true, remaining: 0, resetAfter: 800 } },
      { at: 300, expect: { allowed: false, remaining: 0, resetAfter: 700, retryAfter: 700 } },
      { at: 999.999, expect: { allowed: false, retryAfter: 0.001 } },
      { at: 1000, expect: { allowed: true, remaining: 2, resetAfter: 1000 } },
    ],
  },
  {
    name: 'fixed window: up to 2x limit across a window edge (the documented weakness)',
    policies: () => [fixedWindow({ limit: 3, window: '1s' })],
    steps: [
      { at: 999, times: 3, expect: { allowed: true } },
      { at: 999, expect: { allowed: false, retryAfter: 1 } },
      { at: 1000, times: 3, expect: { allowed: true } },
      { at: 1000, expect: { allowed: false, retryAfter: 1000 } },
    ],
  },
  {
    name: 'fixed window: cost, cost above capacity (-1), cost 0 read, peek writes nothing',
    policies: () => [fixedWindow({ limit: 5, window: '1m' })],
    steps: [
      { at: 0, cost: 0, expect: { allowed: true, remaining: 5, resetAfter: 0, retryAfter: 0 } },
      { at: 0, cost: 3, expect: { allowed: true, remaining: 2, resetAfter: 60_000 } },
      { at: 10, cost: 6, expect: { allowed: false, remaining: 2, retryAfter: -1 } },
      { at: 10, op: 'peek', cost: 2, expect: { allowed: true, remaining: 0 } },
      {
        at: 10,
        op: 'peek',
        cost: 3,
        expect: { allowed: false, remaining: 2, retryAfter: 59_990 },
      },
      { at: 10, cost: 0, expect: { allowed: true, remaining: 2, resetAfter: 59_990 } },
      { at: 20, cost: 3, expect: { allowed: false, remaining: 2 } },
      { at: 20, cost: 2, expect: { allowed: true, remaining: 0 } },
      { at: 30, op: 'reset' },
      { at: 30, expect: { allowed: true, remaining: 4 } },
    ],
  },
  {
    name: 'fixed window: keys are independent',
    policies: () => [fixedWindow({ limit: 1, window: '1s' })],
    steps: [
      { at: 0, key: 'a', expect: { allowed: true } },
      { at: 0, key: 'a', expect: { allowed: false } },
      { at: 0, key: 'b', expect: { allowed: true } },
      { at: 0, key: 'a:b', expect: { allowed: true } },
      { at: 0, key: 'a}b{', expect: { allowed: true } },
      { at: 0, key: 'a%7Db{', expect: { allowed: true } },
    ],
  },
  ...firstRequestScenarios(),
  limitZeroScenario('fixed window', () =>
    fixedWindow({ limit: 0, window: '1s', blockDuration: '1m' }),
  ),
  limitZeroScenario('fixed window, first request', () =>
    fixedWindow({ limit: 0, window: '1s', anchor: 'first-request', blockDuration: '1m' }),
  ),
];

/** anchor 'first-request': a key's window starts at its first admitted request. */
function firstRequestScenarios(): Scenario[] {
  const anchor = 'first-request';
  return [
    {
      name: 'fixed window, first request: the window starts at the first admitted request',
      policies: () => [fixedWindow({ limit: 3, window: '1s', anchor })],
      steps: [
        // A read starts nothing.
        { at: 0, cost: 0, expect: { allowed: true, remaining: 3, resetAfter: 0, retryAfter: 0 } },
        {
          at: 250,
          expect: {
            allowed: true,
            limit: 3,
            remaining: 2,
            resetAfter: 1000,
            policy: 'fixed-3-per-1s-first-request',
          },
        },
        { at: 500, expect: { allowed: true, remaining: 1, resetAfter: 750 } },
        // The aligned window would have ended at 1000: this one has not.
        { at: 1000, expect: { allowed: true, remaining: 0, resetAfter: 250 } },
        { at: 1100, expect: { allowed: false, remaining: 0, resetAfter: 150, retryAfter: 150 } },
        { at: 1249.999, expect: { allowed: false, retryAfter: 0.001 } },
        // The next window starts at the next admitted request, not at the last window's end.
        { at: 1400, op: 'peek', expect: { allowed: true, remaining: 2, resetAfter: 1000 } },
        { at: 1500, expect: { allowed: true, remaining: 2, resetAfter: 1000 } },
        { at: 1600, cost: 4, expect: { allowed: false, remaining: 2, retryAfter: -1 } },
        { at: 2499.999, cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 0.001 } },
        { at: 2500, expect: { allowed: true, remaining: 2, resetAfter: 1000 } },
      ],
    },
    {
      name: 'fixed window, first request: a daily window is not reset at midnight; denials start nothing',
      policies: () => [fixedWindow({ limit: 2, window: '1d', anchor })],
      steps: [
        // At midnight (T0): a cost the policy can never admit does not start a window.
        { at: 0, cost: 3, expect: { allowed: false, remaining: 2, resetAfter: 0, retryAfter: -1 } },
        { at: 72_000_000, expect: { allowed: true, remaining: 1, resetAfter: 86_400_000 } },
        { at: 72_000_000, expect: { allowed: true, remaining: 0, resetAfter: 86_400_000 } },
        // The next midnight changes nothing: 20:00 the next day does.
        { at: 86_400_000, expect: { allowed: false, retryAfter: 72_000_000 } },
        { at: 158_400_000, expect: { allowed: true, remaining: 1, resetAfter: 86_400_000 } },
        { at: 158_400_000, key: 'other', cost: 0, expect: { remaining: 2, resetAfter: 0 } },
      ],
    },
    {
      name: 'fixed window, first request: refunds keep the window, reset and lockouts start over',
      policies: () => [fixedWindow({ limit: 2, window: '10s', anchor, blockDuration: '1m' })],
      steps: [
        { at: 0, cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 10_000 } },
        { at: 1000, op: 'refund', expect: { allowed: true, remaining: 1, resetAfter: 9000 } },
        { at: 2000, op: 'refund', cost: 5, expect: { remaining: 2, resetAfter: 0 } },
        // Refunded to nothing, the window still ends at 10 s.
        { at: 3000, expect: { allowed: true, remaining: 1, resetAfter: 7000 } },
        { at: 10_000, op: 'refund', expect: { remaining: 2, resetAfter: 0 } },
        { at: 10_000, op: 'refund', key: 'nobody', expect: { remaining: 2, resetAfter: 0 } },
        { at: 10_000, cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 10_000 } },
        { at: 11_000, op: 'reset' },
        { at: 11_000, cost: 2, expect: { allowed: true, remaining: 0, resetAfter: 10_000 } },
        { at: 12_000, expect: { allowed: false, reason: 'blocked', retryAfter: 60_000 } },
        { at: 30_000, expect: { allowed: false, reason: 'blocked', retryAfter: 42_000 } },
        // The lockout cleared the window: the next admitted request starts a new one.
        { at: 72_000, expect: { allowed: true, remaining: 1, resetAfter: 10_000 } },
      ],
    },
  ];
}
