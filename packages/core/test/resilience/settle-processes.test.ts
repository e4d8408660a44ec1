/**
 * Reserve-then-settle across OS processes, shaped like an LLM gateway's tokens-per-minute limit
 * (LiteLLM's reserve-then-reconcile): 4 forked processes send 200 requests at once per window on
 * one key of the harness Redis, each reserving an estimate and settling at 0 to 4 times it, for
 * 10 windows. Per window, the estimates admitted never pass the limit plus what settles below
 * their estimates gave back before them (a refund frees room), and the store ends up
 * holding exactly the sum of the admitted requests' actual costs: no overrun is lost, no refund
 * or charge applied twice. A memory store cannot be shared between processes: the same shape
 * runs in one process there, 4 limiters on one store.
 *
 * The bound asserted per window is the tightest one that holds: the actual cost admitted in a
 * window is at most the limit (less a debt carried in) plus the overruns settled in that window,
 * and over the run the store holds every actual cost. "The limit plus the largest single
 * overrun" cannot hold for any limiter that admits before the cost is known: 200 requests
 * estimating 25 each fit a limit of 5 000 exactly, so all 200 are admitted; each then settles
 * at 100 (4x), an overrun of 75. The window has taken 20 000 tokens, against 5 000 + 75 = 5 075;
 * what the limiter can do is charge all of them (a debt of 15 000, the next three windows full).
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis.js';
import {
  fixedWindow,
  memoryStore,
  RateLimiter,
  redisStore,
  slidingWindow,
  tokenBucket,
} from '../../src/index';
import { buildCoreForChildren } from './build-core.js';
import { ask, forkChildren, stopChildren } from './children.js';

jest.setTimeout(60_000);

const PROCESSES = 4;
const REQUESTS_PER_WINDOW = 200;
const WINDOWS = 10;
const LIMIT = 5_000;
/** A minute boundary: window w is frozen at T0 + w minutes + 1 ms. */
const T0 = Date.UTC(2030, 0, 1);

interface Reply {
  estimates: number;
  actuals: number;
  refunds: number;
  largestOverrun: number;
  /** What the settles above their estimates charged, in all. */
  overruns: number;
  reasons: string[];
}

/** The replies' sums. */
function total(replies: readonly Reply[]): Omit<Reply, 'largestOverrun' | 'reasons'> {
  const sum = (field: 'estimates' | 'actuals' | 'refunds' | 'overruns') =>
    replies.reduce((s, r) => s + r[field], 0);
  return {
    estimates: sum('estimates'),
    actuals: sum('actuals'),
    refunds: sum('refunds'),
    overruns: sum('overruns'),
  };
}

let core: string;
let children: ChildProcess[] = [];
let redis: Redis;

beforeAll(async () => {
  redis = connectIoredis();
  await flushRedis(redis);
  core = buildCoreForChildren();
  children = await forkChildren(
    'settle-child.cjs',
    core,
    Array.from({ length: PROCESSES }, () => ({})),
  );
});

afterAll(async () => {
  stopChildren(children);
  redis?.disconnect();
  if (core) rmSync(dirname(core), { recursive: true, force: true });
});

test(`${PROCESSES} processes, ${REQUESTS_PER_WINDOW} requests at once per window, ${WINDOWS} windows: no estimate over the limit, no overrun lost`, async () => {
  const prefix = `settleprocs${process.pid}`;
  // How the parent reads the key: the same storage key the children's limiters write.
  const reader = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: slidingWindow({ limit: LIMIT, window: '1m', buckets: 1, name: 'tokens' }),
    prefix,
  });
  const [stateKey] = reader.storageKeys('tenant');
  for (let w = 0; w < WINDOWS; w++) {
    const at = T0 + w * 60_000 + 1;
    const replies = await Promise.all(
      children.map((child, i) =>
        ask<Reply>(child, {
          prefix,
          at,
          requests: REQUESTS_PER_WINDOW / PROCESSES,
          seed: w * 100 + i,
          limit: LIMIT,
        }),
      ),
    );
    expect(replies.flatMap((r) => r.reasons)).toEqual([]);
    const estimates = replies.reduce((sum, r) => sum + r.estimates, 0);
    const actuals = replies.reduce((sum, r) => sum + r.actuals, 0);
    const refunds = replies.reduce((sum, r) => sum + r.refunds, 0);
    expect(estimates).toBeGreaterThan(0);
    // Admission is exact: each reservation is admitted only while the count plus its estimate
    // fits the limit, so the estimates admitted in a window never pass the limit plus what the
    // settles below an estimate gave back (settles and reservations interleave).
    expect(estimates).toBeLessThanOrEqual(LIMIT + refunds);
    // Hence the actual cost admitted: the limit plus the overruns settled in this window.
    const overruns = replies.reduce((sum, r) => sum + r.overruns, 0);
    expect(actuals).toBeLessThanOrEqual(LIMIT + overruns);
    // The window's count (sliding-window state '<window index>:<count>') is every admitted
    // request's actual cost: every refund and every overrun applied exactly once.
    const state = await redis.get(stateKey!);
    const [index, count] = (state ?? '').split(/[:,]/).map(Number);
    expect(index).toBe(Math.floor((at * 1000) / 60_000_000));
    expect(count).toBe(actuals);
  }
});

/** mulberry32: a small seeded generator, so a failing window can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * `requests` at once through `limiters` (in turn) on one key, each reserving an estimate of 1 to
 * 200 and settling at 0 to 4 times it after a moment (draws seeded by `seed`), as the child
 * processes do (fixtures/settle-child.cjs).
 */
async function gateway(limiters: RateLimiter[], requests: number, seed: number): Promise<Reply> {
  const next = random(seed);
  const reply: Reply = {
    estimates: 0,
    actuals: 0,
    refunds: 0,
    largestOverrun: 0,
    overruns: 0,
    reasons: [],
  };
  const one = async (i: number) => {
    const estimate = 1 + Math.floor(next() * 200);
    const actual = Math.floor(next() * (4 * estimate + 1));
    const r = await limiters[i % limiters.length]!.reserve('tenant', { cost: estimate });
    if (r.reason !== undefined) reply.reasons.push(r.reason);
    if (!r.allowed) return;
    await new Promise((resolve) => setTimeout(resolve, Math.floor(next() * 5)));
    const settled = await r.settle(actual);
    if (settled.reason !== undefined) reply.reasons.push(settled.reason);
    reply.estimates += estimate;
    reply.actuals += actual;
    reply.refunds += Math.max(0, estimate - actual);
    reply.largestOverrun = Math.max(reply.largestOverrun, actual - estimate);
    reply.overruns += Math.max(0, actual - estimate);
  };
  await Promise.all(Array.from({ length: requests }, (_, i) => one(i)));
  return reply;
}

/**
 * The units a fixedWindow key of `LIMIT` per minute owes from the window of `at` on (its debt
 * carries: docs/algorithms.md#fixedwindow-debt), read through peeks as any store answers them:
 * the count while it fits the window; in debt, the last owing window from `resetAfter` and its
 * count from the largest cost that fits there.
 */
async function owedFrom(limiter: RateLimiter, at: number): Promise<number> {
  const window = 60_000;
  const windowLeft = window - (at % window);
  const read = await limiter.peek('tenant', { cost: 0 });
  if (read.resetAfter <= windowLeft) return LIMIT - read.remaining;
  const windowsAfter = Math.round((read.resetAfter - windowLeft) / window);
  const lastStarts = windowLeft + (windowsAfter - 1) * window;
  let fits = 0;
  for (let step = 4096; step >= 1; step /= 2) {
    const cost = fits + step;
    if (cost <= LIMIT && (await limiter.peek('tenant', { cost })).retryAfter === lastStarts) {
      fits = cost;
    }
  }
  return windowsAfter * LIMIT + (LIMIT - fits);
}

/**
 * Windows of `run` (the requests of window w, on a clock frozen at `at`) against a fixedWindow of
 * `LIMIT` per minute whose debt carries: per window, the estimates admitted fit what the debt
 * carried in left of the limit (plus refunds), the key owes exactly the carried debt plus every
 * admitted request's actual cost (no overrun lost, none applied twice), and over the windows so
 * far the tokens charged never pass LIMIT per window plus the overruns of one window.
 */
async function carriedDebtWindows(
  run: (w: number, at: number) => Promise<Reply[]>,
  owed: (at: number) => Promise<number>,
): Promise<void> {
  let carried = 0;
  let charged = 0;
  let largestOverruns = 0;
  for (let w = 0; w < WINDOWS; w++) {
    const at = T0 + w * 60_000 + 1;
    const replies = await run(w, at);
    expect(replies.flatMap((r) => r.reasons)).toEqual([]);
    const sums = total(replies);
    expect(sums.estimates).toBeLessThanOrEqual(Math.max(0, LIMIT - carried) + sums.refunds);
    // Hence the actual cost admitted: what the carried debt left plus this window's overruns.
    expect(sums.actuals).toBeLessThanOrEqual(Math.max(0, LIMIT - carried) + sums.overruns);
    const owes = await owed(at);
    expect(owes).toBe(carried + sums.actuals);
    carried = Math.max(0, owes - LIMIT);
    charged += sums.actuals;
    largestOverruns = Math.max(largestOverruns, sums.overruns);
    expect(charged).toBeLessThanOrEqual((w + 1) * LIMIT + largestOverruns);
  }
}

test(`fixedWindow on Redis, ${PROCESSES} processes, ${REQUESTS_PER_WINDOW} requests at once per window, ${WINDOWS} windows: the debt carries, no overrun lost`, async () => {
  const prefix = `settlefw${process.pid}`;
  const policies = fixedWindow({ limit: LIMIT, window: '1m', name: 'tokens' });
  const reader = new RateLimiter({ store: redisStore({ client: redis }), policies, prefix });
  const [stateKey] = reader.storageKeys('tenant');
  await carriedDebtWindows(
    (w, at) =>
      Promise.all(
        children.map((child, i) =>
          ask<Reply>(child, {
            prefix,
            at,
            requests: REQUESTS_PER_WINDOW / PROCESSES,
            seed: w * 100 + i,
            limit: LIMIT,
            policy: 'fixedWindow',
          }),
        ),
      ),
    async (at) => {
      // The key's one integer: this window's count, or in debt −1 − (last · (LIMIT + 1) + r),
      // windows up to `last` full and r in it (lua/fixed-window.lua's Debt).
      const value = Number(await redis.get(stateKey!));
      const index = Math.floor((at * 1000) / 60_000_000);
      const packed = value < 0 ? -1 - value : value;
      const r = packed % (LIMIT + 1);
      const last = (packed - r) / (LIMIT + 1);
      return last < index ? 0 : (last - index) * LIMIT + r;
    },
  );
});

test(`fixedWindow on the memory store, ${PROCESSES} limiters in one process, ${REQUESTS_PER_WINDOW} requests at once per window, ${WINDOWS} windows: the debt carries, no overrun lost`, async () => {
  let now = T0;
  const store = memoryStore({ clock: () => now });
  const policies = fixedWindow({ limit: LIMIT, window: '1m', name: 'tokens' });
  const limiters = Array.from(
    { length: PROCESSES },
    () => new RateLimiter({ store, policies, prefix: 'gateway' }),
  );
  await carriedDebtWindows(
    async (w, at) => {
      now = at;
      return [await gateway(limiters, REQUESTS_PER_WINDOW, w)];
    },
    (at) => owedFrom(limiters[0]!, at),
  );
});

test(`memory store, ${PROCESSES} limiters in one process, ${REQUESTS_PER_WINDOW} requests at once per window, ${WINDOWS} windows: no estimate over the limit, no overrun lost`, async () => {
  let now = T0;
  const store = memoryStore({ clock: () => now });
  // A day's budget with a frozen clock inside each window: nothing refills until the next day,
  // when the bucket is full again. 5 000 per day is one token per 17 280 000 µs, so a denial's
  // retryAfter tells the tokens left to the unit, debt included.
  const policies = tokenBucket({ limit: LIMIT, window: '1d', name: 'tokens' });
  const limiters = Array.from(
    { length: PROCESSES },
    () => new RateLimiter({ store, policies, prefix: 'gateway' }),
  );
  /** Tokens in the bucket now (negative: debt). */
  const tokensLeft = async () => {
    const d = await limiters[0]!.peek('tenant');
    if (d.allowed) return d.remaining + 1;
    return 1 - Math.round((d.retryAfter * 1000) / 17_280_000);
  };
  // Tokens left after the day before: a day refills LIMIT of them, up to LIMIT, so a debt
  // carries into the next day (docs/algorithms.md#debt).
  let left = 0;
  for (let w = 0; w < WINDOWS; w++) {
    now = T0 + w * 86_400_000 + 1;
    const start = Math.min(LIMIT, left + LIMIT);
    const { estimates, actuals, refunds, reasons } = await gateway(
      limiters,
      REQUESTS_PER_WINDOW,
      w,
    );
    expect(reasons).toEqual([]);
    expect(estimates).toBeGreaterThan(0);
    // Admission is exact against what the bucket held (a debt left by the day before included),
    // plus what settles below an estimate gave back meanwhile.
    expect(estimates).toBeLessThanOrEqual(start + refunds);
    left = await tokensLeft();
    expect(left).toBe(start - actuals);
  }
});
