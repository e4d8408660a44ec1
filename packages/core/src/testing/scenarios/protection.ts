/**
 * Lockouts (plain and progressive) and blocks by hand, for every algorithm alone and for mixed
 * limiters.
 */
import {
  type BlockDuration,
  fixedWindow,
  gcra,
  leakyBucket,
  type Policy,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../index.js';
import type { Scenario, Step } from '../table.js';

/** One policy of each kind whose capacity is `capacity` cost-1 requests at time 0. */
const KINDS: Array<{
  kind: string;
  make: (blockDuration: BlockDuration) => Policy;
  capacity: number;
}> = [
  {
    kind: 'fixedWindow',
    capacity: 2,
    make: (b) => fixedWindow({ limit: 2, window: '1s', blockDuration: b }),
  },
  {
    kind: 'slidingLog',
    capacity: 2,
    make: (b) => slidingLog({ limit: 2, window: '1s', blockDuration: b }),
  },
  {
    kind: 'slidingWindow',
    capacity: 2,
    make: (b) => slidingWindow({ limit: 2, window: '1s', blockDuration: b }),
  },
  {
    kind: 'tokenBucket',
    capacity: 2,
    make: (b) => tokenBucket({ limit: 2, window: '1s', blockDuration: b }),
  },
  { kind: 'gcra', capacity: 2, make: (b) => gcra({ limit: 2, window: '1s', blockDuration: b }) },
  {
    kind: 'leakyBucket',
    capacity: 2,
    make: (b) => leakyBucket({ limit: 2, window: '1s', burst: 1, blockDuration: b }),
  },
  {
    kind: 'smoothBursty',
    capacity: 1,
    make: (b) => smoothBursty({ limit: 2, window: '1s', blockDuration: b }),
  },
  {
    kind: 'smoothWarmingUp',
    capacity: 1,
    make: (b) => smoothWarmingUp({ limit: 2, window: '1s', warmup: '1s', blockDuration: b }),
  },
];

/** Exhausts a fresh key at `at`, then the next consume is locked out for `blocked` ms. */
function lockedOutAt(at: number, capacity: number, blocked: number, policy: string): Step[] {
  return [
    { at, times: capacity, expect: { allowed: true } },
    {
      at,
      expect: { allowed: false, reason: 'blocked', retryAfter: blocked, remaining: 0, policy },
    },
  ];
}

export const lockoutScenarios: Scenario[] = KINDS.flatMap(({ kind, make, capacity }) => {
  const plain = make('10s');
  const progressive = make({ initial: '1s', multiplier: 3, max: '5s', forgetAfter: '20s' });
  return [
    {
      name: `lockout ${kind}: a denial blocks the key for blockDuration; nothing is charged; then it starts fresh`,
      policies: () => [make('10s')],
      steps: [
        ...lockedOutAt(0, capacity, 10_000, plain.name),
        { at: 5000, expect: { allowed: false, reason: 'blocked', retryAfter: 5000 } },
        { at: 5000, op: 'peek', expect: { allowed: false, reason: 'blocked', retryAfter: 5000 } },
        { at: 5000, cost: 0, expect: { allowed: false, reason: 'blocked' } },
        { at: 5000, op: 'refund', expect: { allowed: false, reason: 'blocked', retryAfter: 5000 } },
        { at: 9999.5, expect: { allowed: false, reason: 'blocked', retryAfter: 0.5 } },
        { at: 10_000, times: capacity, expect: { allowed: true, reason: undefined } },
        // A cost above capacity is denied (−1) without a lockout (smooth policies have no
        // such bound: Guava admits any cost and makes the next request pay).
        ...(kind.startsWith('smooth')
          ? []
          : ([
              {
                at: 20_000,
                cost: 3,
                expect: { allowed: false, retryAfter: -1, reason: undefined },
              },
              { at: 20_000, expect: { allowed: true } },
            ] as Step[])),
      ],
    },
    {
      name: `progressive lockout ${kind}: each block in a row lasts multiplier times longer, up to max; forgotten after forgetAfter`,
      policies: () => [make({ initial: '1s', multiplier: 3, max: '5s', forgetAfter: '20s' })],
      steps: [
        ...lockedOutAt(0, capacity, 1000, progressive.name),
        ...lockedOutAt(1000, capacity, 3000, progressive.name),
        ...lockedOutAt(4000, capacity, 5000, progressive.name),
        ...lockedOutAt(9000, capacity, 5000, progressive.name),
        // The last block ended at 14 s: 20 s later the count starts over.
        ...lockedOutAt(34_000, capacity, 1000, progressive.name),
      ],
    },
    {
      name: `block by hand ${kind}: denied on every call until it ends or unblock; 'forever' has retryAfter −1`,
      policies: () => [make('10s')],
      steps: [
        { at: 0, expect: { allowed: true } },
        { at: 0, op: 'block', duration: '2s' },
        {
          at: 500,
          expect: { allowed: false, reason: 'blocked', retryAfter: 1500, policy: plain.name },
        },
        { at: 500, op: 'peek', expect: { allowed: false, reason: 'blocked', retryAfter: 1500 } },
        { at: 500, op: 'unblock' },
        { at: 500, op: 'peek', cost: 0, expect: { allowed: true, reason: undefined } },
        { at: 600, op: 'block', duration: 'forever' },
        {
          at: 9_000_000,
          expect: { allowed: false, reason: 'blocked', retryAfter: -1, resetAfter: -1 },
        },
        { at: 9_000_000, op: 'unblock' },
        { at: 9_000_000, expect: { allowed: true } },
        { at: 9_000_000, op: 'block', duration: '1m' },
        { at: 9_000_000, op: 'reset' },
        { at: 9_000_000, expect: { allowed: true } },
      ],
    },
  ];
});

export const mixedProtectionScenarios: Scenario[] = [
  {
    name: 'lockout mixed: the denying policy blocks and is named; the others stay untouched',
    policies: () => [
      fixedWindow({ limit: 1, window: '1s', blockDuration: '5s', name: 'per-second' }),
      gcra({ limit: 10, window: '10s', name: 'per-10s' }),
    ],
    steps: [
      { at: 0, expect: { allowed: true } },
      {
        at: 0,
        expect: { allowed: false, reason: 'blocked', policy: 'per-second', retryAfter: 5000 },
      },
      {
        at: 4000,
        op: 'peek',
        expect: { reason: 'blocked', policy: 'per-second', retryAfter: 1000 },
      },
      { at: 5000, expect: { allowed: true, policies: [{ remaining: 0 }, { remaining: 9 }] } },
    ],
  },
  {
    name: 'lockout mixed: when two policies deny, the longer lockout wins',
    policies: () => [
      fixedWindow({ limit: 1, window: '1m', blockDuration: '5s', name: 'a' }),
      slidingLog({ limit: 1, window: '1m', blockDuration: '30s', name: 'b' }),
      tokenBucket({ limit: 5, window: '1m', name: 'c' }),
    ],
    steps: [
      { at: 0, expect: { allowed: true } },
      { at: 0, expect: { allowed: false, reason: 'blocked', policy: 'b', retryAfter: 30_000 } },
      // b starts fresh; a's count (1 in this minute) was kept, so a denies and locks out next.
      { at: 30_000, expect: { allowed: false, reason: 'blocked', policy: 'a', retryAfter: 5000 } },
      // Nothing was charged while blocked: c is full again and gives one.
      { at: 60_000, expect: { allowed: true, policies: [{}, {}, { remaining: 4 }] } },
    ],
  },
  {
    name: 'lockout mixed: a policy without blockDuration denies as usual',
    policies: () => [
      fixedWindow({ limit: 1, window: '1s', name: 'strict' }),
      gcra({ limit: 1, window: '1m', blockDuration: '1h', name: 'lock' }),
    ],
    steps: [
      { at: 0, expect: { allowed: true } },
      {
        at: 500,
        expect: { allowed: false, policy: 'lock', reason: 'blocked', retryAfter: 3_600_000 },
      },
    ],
  },
  {
    name: 'block by hand mixed: every policy denies; the first speaks; nothing is charged',
    policies: () => [
      slidingWindow({ limit: 3, window: '1s', name: 'first' }),
      leakyBucket({ limit: 3, window: '1s', burst: 2, name: 'second' }),
      smoothBursty({ limit: 3, window: '1s', name: 'third' }),
    ],
    steps: [
      { at: 0, op: 'block', duration: '1s' },
      {
        at: 0,
        times: 3,
        expect: {
          allowed: false,
          reason: 'blocked',
          policy: 'first',
          retryAfter: 1000,
          policies: [
            { allowed: false, retryAfter: 1000 },
            { allowed: false, retryAfter: 1000 },
            { allowed: false, retryAfter: 1000 },
          ],
        },
      },
      { at: 1000, expect: { allowed: true, policies: [{ remaining: 2 }, { remaining: 2 }, {}] } },
    ],
  },
];
