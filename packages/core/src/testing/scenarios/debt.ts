/**
 * Reserve, settle above and below, cancel, penalize and debt repayment, for every algorithm that
 * carries debt and for a mixed limiter (docs/algorithms.md#debt).
 */
import {
  fixedWindow,
  gcra,
  type Policy,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../index.js';
import type { Scenario, Step } from '../table.js';

/**
 * The steps every refilling algorithm (one unit back per 100 ms, capacity 10) answers alike:
 * a settle above the estimate goes 12 units into debt, repaid 700 ms later; settle and cancel
 * act once; a settle below refunds; a denied reservation settles nothing; penalize charges past
 * the limit and through a block.
 */
const REFILLING: Step[] = [
  { at: 0, op: 'reserve', cost: 4, expect: { allowed: true, remaining: 6 } },
  // 4 + 12 = 16 units: 6 beyond the capacity. A cost-1 request waits for 7 to come back.
  {
    at: 0,
    op: 'settle',
    cost: 16,
    expect: { allowed: false, remaining: 0, retryAfter: 700, resetAfter: 1600 },
  },
  { at: 0, expect: { allowed: false, remaining: 0, retryAfter: 700 } },
  // A second settle (or cancel) does nothing: the debt is the same.
  { at: 0, op: 'settle', cost: 100, expect: { allowed: false, retryAfter: 700 } },
  { at: 0, op: 'cancel', expect: { allowed: false, retryAfter: 700 } },
  { at: 699.999, expect: { allowed: false, retryAfter: 0.001 } },
  { at: 700, expect: { allowed: true, remaining: 0 } },
  // Full again at 5 s: reserve 8, settle 3: 5 come back.
  { at: 5000, op: 'reserve', reservation: 'b', cost: 8, expect: { allowed: true, remaining: 2 } },
  { at: 5000, op: 'settle', reservation: 'b', cost: 3, expect: { allowed: true, remaining: 7 } },
  { at: 5000, op: 'cancel', reservation: 'b', expect: { allowed: true, remaining: 7 } },
  { at: 5000, expect: { allowed: true, remaining: 6 } },
  // Cancel gives the whole reservation back.
  { at: 10_000, op: 'reserve', reservation: 'c', cost: 5, expect: { remaining: 5 } },
  { at: 10_000, op: 'cancel', reservation: 'c', expect: { allowed: true, remaining: 10 } },
  // A denied reservation charges nothing, and settling it does nothing.
  { at: 10_000, op: 'reserve', reservation: 'd', cost: 11, expect: { allowed: false } },
  { at: 10_000, op: 'settle', reservation: 'd', cost: 5, expect: { allowed: false } },
  { at: 10_000, expect: { allowed: true, remaining: 9 } },
  // Penalize: 25 units on a full key (1 s idle), 15 beyond; a block does not stop it.
  { at: 20_000, op: 'block', duration: '1s' },
  { at: 20_000, op: 'penalize', cost: 25, expect: { allowed: false, reason: 'blocked' } },
  { at: 21_000, expect: { allowed: false, remaining: 0, retryAfter: 600 } },
  { at: 21_600, expect: { allowed: true, remaining: 0 } },
];

/** REFILLING for `policy`. */
function refilling(name: string, policy: () => Policy): Scenario {
  return {
    name: `debt ${name}: settle, cancel, penalize, repaid by refill`,
    policies: () => [policy()],
    steps: REFILLING,
  };
}

export const debtScenarios: Scenario[] = [
  refilling('tokenBucket', () => tokenBucket({ limit: 10, window: '1s' })),
  refilling('gcra', () => gcra({ limit: 10, window: '1s' })),
  {
    name: 'debt slidingWindow: counted past the limit, repaid as its sub-window slides out; a settle below refunds only in the charge sub-window',
    policies: () => [slidingWindow({ limit: 10, window: '1s' })],
    steps: [
      { at: 0, op: 'reserve', cost: 4, expect: { allowed: true, remaining: 6 } },
      { at: 0, op: 'settle', cost: 16, expect: { allowed: false, remaining: 0, retryAfter: 1000 } },
      { at: 999, expect: { allowed: false, remaining: 0, retryAfter: 1 } },
      { at: 1000, expect: { allowed: true, remaining: 9 } },
      { at: 5000, op: 'reserve', reservation: 'b', cost: 8, expect: { remaining: 2 } },
      {
        at: 5050,
        op: 'settle',
        reservation: 'b',
        cost: 3,
        expect: { allowed: true, remaining: 7 },
      },
      { at: 6000, op: 'reserve', reservation: 'c', cost: 5, expect: { remaining: 5 } },
      // The next sub-window: nothing to refund any more, the 5 stay counted.
      { at: 6100, op: 'settle', reservation: 'c', cost: 0, expect: { remaining: 5 } },
      // 5 + 12 = 17 counted: a cost-1 request waits for the newer sub-window to leave.
      {
        at: 6100,
        op: 'penalize',
        cost: 12,
        expect: { allowed: false, remaining: 0, retryAfter: 1000 },
      },
      { at: 7000, expect: { allowed: false, retryAfter: 100 } },
      { at: 7100, expect: { allowed: true, remaining: 9 } },
    ],
  },
  {
    name: 'debt slidingWindow: a debt larger than the window is held one window, then forgiven',
    policies: () => [slidingWindow({ limit: 10, window: '1s' })],
    steps: [
      { at: 250, op: 'penalize', cost: 35, expect: { allowed: false, retryAfter: 950 } },
      { at: 250, op: 'peek', cost: 10, expect: { allowed: false, retryAfter: 950 } },
      { at: 1199, expect: { allowed: false, remaining: 0, retryAfter: 1 } },
      { at: 1200, expect: { allowed: true, remaining: 9 } },
    ],
  },
  {
    name: 'debt fixedWindow: an overrun carries into the next window; a settle below refunds only in the charge window',
    policies: () => [fixedWindow({ limit: 10, window: '1s' })],
    steps: [
      { at: 0, op: 'reserve', cost: 4, expect: { allowed: true, remaining: 6 } },
      // 16 owed: this window full, 6 in the next one (until it ends at 2 s).
      {
        at: 100,
        op: 'settle',
        cost: 16,
        expect: { allowed: false, remaining: 0, retryAfter: 900, resetAfter: 1900 },
      },
      { at: 100, op: 'cancel', expect: { allowed: false, retryAfter: 900 } },
      { at: 999, expect: { allowed: false, remaining: 0, retryAfter: 1 } },
      // The next window holds 6: a cost of 4 fits there, one of 5 the window after.
      { at: 999, op: 'peek', cost: 4, expect: { allowed: false, retryAfter: 1 } },
      { at: 999, op: 'peek', cost: 5, expect: { allowed: false, retryAfter: 1001 } },
      { at: 999, op: 'peek', cost: 0, expect: { allowed: true, remaining: 0, resetAfter: 1001 } },
      { at: 1000, expect: { allowed: true, remaining: 3 } },
      { at: 2500, op: 'reserve', reservation: 'b', cost: 5, expect: { remaining: 5 } },
      { at: 3050, cost: 4, expect: { remaining: 6 } },
      // The window of the charge has ended: nothing comes back, least of all to the new one.
      {
        at: 3100,
        op: 'settle',
        reservation: 'b',
        cost: 1,
        expect: { remaining: 6, resetAfter: 900 },
      },
      { at: 3100, op: 'penalize', cost: 3, expect: { allowed: true, remaining: 2 } },
    ],
  },
  {
    name: 'debt fixedWindow: a debt of several windows, repaid one window at a time; a refund lowers it',
    policies: () => [fixedWindow({ limit: 10, window: '1s' })],
    steps: [
      // 35 owed from the window of 0 s: full until 3 s, then 5 in the window of 3 s.
      {
        at: 200,
        op: 'penalize',
        cost: 35,
        expect: { allowed: false, remaining: 0, retryAfter: 2800, resetAfter: 3800 },
      },
      { at: 200, op: 'peek', cost: 6, expect: { allowed: false, retryAfter: 3800 } },
      { at: 200, op: 'peek', cost: 11, expect: { allowed: false, retryAfter: -1 } },
      { at: 1500, expect: { allowed: false, remaining: 0, retryAfter: 1500, resetAfter: 2500 } },
      // 25 owed from the window of 1 s; 12 back leave 13: that window full, 3 in the next.
      {
        at: 1500,
        op: 'refund',
        cost: 12,
        expect: { allowed: true, remaining: 0, resetAfter: 1500 },
      },
      { at: 1500, op: 'peek', expect: { allowed: false, retryAfter: 500 } },
      { at: 2000, cost: 7, expect: { allowed: true, remaining: 0 } },
      { at: 2000, expect: { allowed: false, retryAfter: 1000 } },
      // Back in debt with a penalty on a full window; a refund larger than the debt empties it.
      { at: 2000, op: 'penalize', cost: 4, expect: { allowed: false, retryAfter: 1000 } },
      { at: 2000, op: 'refund', cost: 50, expect: { allowed: true, remaining: 10 } },
      { at: 2000, expect: { allowed: true, remaining: 9 } },
    ],
  },
  {
    name: "debt fixedWindow anchor 'first-request': an overrun carries into the windows that follow back to back; a refund lowers it",
    policies: () => [fixedWindow({ limit: 10, window: '1s', anchor: 'first-request' })],
    steps: [
      // 15 owed from a window started now: [0, 1 s) full, 5 in [1 s, 2 s).
      {
        at: 0,
        op: 'penalize',
        cost: 15,
        expect: { allowed: false, remaining: 0, retryAfter: 1000, resetAfter: 2000 },
      },
      { at: 500, op: 'reserve', cost: 1, expect: { allowed: false, retryAfter: 500 } },
      { at: 500, op: 'peek', cost: 6, expect: { allowed: false, retryAfter: 1500 } },
      { at: 500, op: 'peek', cost: 0, expect: { allowed: true, remaining: 0, resetAfter: 1500 } },
      // The next window of the chain holds the 5.
      { at: 1000, op: 'reserve', cost: 4, expect: { allowed: true, remaining: 1 } },
      { at: 1200, op: 'settle', cost: 2, expect: { allowed: true, remaining: 3, resetAfter: 800 } },
      // 7 + 25 = 32 owed from [1 s, 2 s): full until 4 s, then 2 in [4 s, 5 s).
      {
        at: 1200,
        op: 'penalize',
        cost: 25,
        expect: { allowed: false, remaining: 0, retryAfter: 2800, resetAfter: 3800 },
      },
      // Clock steps: at 2.5 s, 22 owed from [2 s, 3 s); 13 back leave 9 in it.
      { at: 2500, expect: { allowed: false, retryAfter: 1500, resetAfter: 2500 } },
      {
        at: 2500,
        op: 'refund',
        cost: 13,
        expect: { allowed: true, remaining: 1, resetAfter: 500 },
      },
      { at: 2500, expect: { allowed: true, remaining: 0 } },
      // The chain is over at 3 s: a new window starts at the next request.
      { at: 3000, expect: { allowed: true, remaining: 9, resetAfter: 1000 } },
      // 40 owed, 4 full windows: a cost of 1 waits for the window after them. Seen only after
      // the chain ended, nothing is left of it.
      {
        at: 4000,
        op: 'penalize',
        cost: 40,
        expect: { allowed: false, retryAfter: 4000, resetAfter: 4000 },
      },
      { at: 10_000, expect: { allowed: true, remaining: 9, resetAfter: 1000 } },
    ],
  },
  {
    name: "debt fixedWindow extendWindow 'on-denial': a denial in debt moves the chain out, a pause repays it",
    policies: () => [fixedWindow({ limit: 2, window: '1s', extendWindow: 'on-denial' })],
    steps: [
      // 5 owed: [0, 1 s) and [1 s, 2 s) full, 1 in [2 s, 3 s).
      {
        at: 0,
        op: 'penalize',
        cost: 5,
        expect: { allowed: false, remaining: 0, retryAfter: 2000, resetAfter: 3000 },
      },
      // A denial starts the current window over: the chain now ends at 3.5 s.
      { at: 500, expect: { allowed: false, retryAfter: 2000, resetAfter: 3000 } },
      { at: 500, op: 'peek', cost: 0, expect: { allowed: true, remaining: 0, resetAfter: 3000 } },
      { at: 2700, op: 'peek', cost: 0, expect: { allowed: true, remaining: 1, resetAfter: 800 } },
      { at: 2700, expect: { allowed: true, remaining: 0, resetAfter: 800 } },
      { at: 3500, expect: { allowed: true, remaining: 1, resetAfter: 1000 } },
    ],
  },
  {
    name: 'debt fixedWindow, a limit kept per window key: the base key carries a debt of several windows; refunds lower it',
    policies: () => [fixedWindow({ limit: 2_000_000, window: '1s' })],
    steps: [
      // 7 000 000 owed from the window of 0 s: full until 3 s, then 1 000 000 in the window of 3 s.
      {
        at: 200,
        op: 'penalize',
        cost: 7_000_000,
        expect: { allowed: false, remaining: 0, retryAfter: 2800, resetAfter: 3800 },
      },
      { at: 200, expect: { allowed: false, remaining: 0, retryAfter: 2800, resetAfter: 3800 } },
      { at: 200, op: 'peek', cost: 1_000_001, expect: { allowed: false, retryAfter: 3800 } },
      { at: 200, op: 'peek', cost: 2_000_001, expect: { allowed: false, retryAfter: -1 } },
      // A window with no count of its own: the debt the base key carries reaches it.
      { at: 1500, expect: { allowed: false, remaining: 0, retryAfter: 1500, resetAfter: 2500 } },
      // 5 000 000 owed from the window of 1 s; 2 400 000 back leave that window full, 600 000 next.
      {
        at: 1500,
        op: 'refund',
        cost: 2_400_000,
        expect: { allowed: true, remaining: 0, resetAfter: 1500 },
      },
      { at: 1500, op: 'peek', expect: { allowed: false, retryAfter: 500 } },
      { at: 2000, cost: 1_400_000, expect: { allowed: true, remaining: 0, resetAfter: 1000 } },
      { at: 2000, expect: { allowed: false, retryAfter: 1000 } },
      // A penalty on a full window goes into debt again; a refund larger than the overrun ends it.
      { at: 2000, op: 'penalize', cost: 5, expect: { allowed: false, retryAfter: 1000 } },
      { at: 2000, op: 'refund', cost: 50, expect: { allowed: true, remaining: 45 } },
      { at: 2000, expect: { allowed: true, remaining: 44 } },
      { at: 3000, expect: { allowed: true, remaining: 1_999_999 } },
    ],
  },
  {
    name: 'debt smoothBursty: a settle above the estimate pushes the next-free time ahead',
    policies: () => [smoothBursty({ limit: 10, window: '1s' })],
    steps: [
      { at: 0, op: 'reserve', cost: 4, expect: { allowed: true, remaining: 0 } },
      { at: 0, op: 'settle', cost: 6, expect: { allowed: false, retryAfter: 600 } },
      { at: 599, expect: { allowed: false, retryAfter: 1 } },
      { at: 600, expect: { allowed: true } },
      { at: 600, op: 'penalize', cost: 10, expect: { allowed: false, retryAfter: 1100 } },
      { at: 1700, expect: { allowed: true } },
    ],
  },
  {
    name: 'debt smoothWarmingUp: a penalty pushes the next-free time ahead',
    policies: () => [smoothWarmingUp({ limit: 10, window: '1s', warmup: '1s' })],
    steps: [
      { at: 0, op: 'penalize', cost: 3, expect: { allowed: false } },
      { at: 0, op: 'reserve', cost: 1, expect: { allowed: false } },
    ],
  },
  {
    name: 'debt with two policies: reserve is all-or-nothing, settle charges each policy',
    policies: () => [
      tokenBucket({ limit: 10, window: '1s', name: 'tb' }),
      fixedWindow({ limit: 5, window: '1m', name: 'fw' }),
    ],
    steps: [
      {
        at: 0,
        op: 'reserve',
        cost: 4,
        expect: { allowed: true, policies: [{ remaining: 6 }, { remaining: 1 }] },
      },
      {
        at: 0,
        op: 'settle',
        cost: 7,
        expect: {
          allowed: false,
          policy: 'fw',
          retryAfter: 60_000,
          policies: [{ remaining: 3 }, { remaining: 0 }],
        },
      },
      // Denied by fw: tb is not charged either.
      { at: 0, op: 'reserve', reservation: 'b', cost: 1, expect: { allowed: false, policy: 'fw' } },
      { at: 0, op: 'peek', expect: { policies: [{ remaining: 3 }, { remaining: 0 }] } },
      // fw's overrun of 2 carried into the next minute.
      { at: 60_000, expect: { allowed: true, policies: [{ remaining: 9 }, { remaining: 2 }] } },
    ],
  },
];
