/**
 * Reserve-then-settle across OS processes, shaped like an LLM gateway's tokens-per-minute limit
 * (LiteLLM's reserve-then-reconcile): 4 forked processes send 200 requests at once per window on
 * one key of the harness Redis, each reserving an estimate and settling at 0 to 4 times it, for
 * 10 windows. Per window, the estimates admitted never pass the limit plus what settles below
 * their estimates gave back before them (a refund frees room), and the store ends up
 * holding exactly the sum of the admitted requests' actual costs: no overrun is lost, no refund
 * or charge applied twice. A memory store cannot be shared between processes: the same shape
 * runs in one process there, 4 limiters on one store.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis.js';
import { memoryStore, RateLimiter, redisStore, slidingWindow, tokenBucket } from '../../src/index';
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
  reasons: string[];
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
    const next = random(w);
    let estimates = 0;
    let actuals = 0;
    let refunds = 0;
    const one = async (i: number) => {
      const estimate = 1 + Math.floor(next() * 200);
      const actual = Math.floor(next() * (4 * estimate + 1));
      const r = await limiters[i % PROCESSES]!.reserve('tenant', { cost: estimate });
      expect(r.reason).toBeUndefined();
      if (!r.allowed) return;
      await new Promise((resolve) => setTimeout(resolve, Math.floor(next() * 5)));
      expect((await r.settle(actual)).reason).toBeUndefined();
      estimates += estimate;
      actuals += actual;
      refunds += Math.max(0, estimate - actual);
    };
    await Promise.all(Array.from({ length: REQUESTS_PER_WINDOW }, (_, i) => one(i)));
    expect(estimates).toBeGreaterThan(0);
    // Admission is exact against what the bucket held (a debt left by the day before included),
    // plus what settles below an estimate gave back meanwhile.
    expect(estimates).toBeLessThanOrEqual(start + refunds);
    left = await tokensLeft();
    expect(left).toBe(start - actuals);
  }
});
