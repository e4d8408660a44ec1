/**
 * limiter.acquire: Guava acquire / tryAcquire(timeout). Smooth policies reserve in one round
 * trip and wait the returned delay; other policies are retried after retryAfter; maxWait is
 * never passed. Waits use real timers, so clocks are injected and frozen (reservations are
 * then exact) or faked together with the timers (retries); nothing asserts a speed.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { createClient } from 'redis';
import {
  connectIoredis,
  flushRedis,
  keysWithTtl,
  testRedisUrl,
  workerDb,
} from '../../../../test/harness/redis';
import { type StoreDecision } from '../../src/decision';
import {
  type Decision,
  fixedWindow,
  gcra,
  memoryStore,
  type Policy,
  RateLimitArgumentError,
  RateLimiter,
  redisStore,
  type Store,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../src/index';
import { ALGORITHM_CASES } from '../conformance/algorithms/index';
import { T0 } from '../conformance/table';

let redis: Redis;
let other: Redis;
beforeAll(() => {
  redis = connectIoredis();
  other = connectIoredis();
});
beforeEach(async () => {
  await flushRedis(redis);
});
afterAll(async () => {
  await redis.quit();
  await other.quit();
});

const frozen = () => T0;
const stores: Array<[string, (clock: () => number) => Store]> = [
  ['memory', (clock) => memoryStore({ clock })],
  ['redis', (clock) => redisStore({ client: redis, clock })],
];

let run = 0;
const prefix = () => `acq${run++}`;

describe.each(stores)('acquire on the %s store', (_name, makeStore) => {
  test('smooth: successive acquires are reserved one stable interval apart (Guava testSimple)', async () => {
    const limiter = new RateLimiter({
      store: makeStore(frozen),
      policies: smoothBursty({ limit: 1, window: 15 }),
      prefix: prefix(),
    });
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const d = await limiter.acquire('k');
      expect(d.allowed).toBe(true);
      delays.push(d.delay);
    }
    // The clock is frozen, so each reservation starts where the last one ended.
    expect(delays).toEqual([0, 15, 30, 45]);
    // Every reservation was charged: a plain consume now is denied until the last one is paid.
    expect(await limiter.peek('k')).toMatchObject({ allowed: false, retryAfter: 60 });
  });

  test('smooth: warm-up reservations follow the cold trapezoid', async () => {
    // Guava testWarmUp scaled down 100×: 200/s, 40 ms warm-up, waits 13.75, 11.25, 8.75, 6.25, 5.
    const limiter = new RateLimiter({
      store: makeStore(frozen),
      policies: smoothWarmingUp({ limit: 200, window: '1s', warmup: 40 }),
      prefix: prefix(),
    });
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) delays.push((await limiter.acquire('k')).delay);
    expect(delays).toEqual([0, 13.75, 25, 33.75, 40, 45]);
  });

  test('smooth: a reservation further away than maxWait is refused at once and charges nothing', async () => {
    const limiter = new RateLimiter({
      store: makeStore(frozen),
      policies: smoothBursty({ limit: 1, window: 40 }),
      prefix: prefix(),
    });
    expect(await limiter.acquire('k', { maxWait: 0 })).toMatchObject({ allowed: true, delay: 0 });
    const refused = await limiter.acquire('k', { maxWait: 39.999 });
    expect(refused).toMatchObject({ allowed: false, retryAfter: 40, delay: 0 });
    expect(await limiter.peek('k')).toMatchObject({ allowed: false, retryAfter: 40 });
    // Within maxWait (measured from the call, as Guava's timeout): reserved and waited for.
    const admitted = await limiter.acquire('k', { maxWait: 60 });
    expect(admitted).toMatchObject({ allowed: true, delay: 40, retryAfter: 0 });
    expect(await limiter.peek('k')).toMatchObject({ allowed: false, retryAfter: 80 });
  });

  test('smooth with another policy: a reservation charges every policy or none', async () => {
    const limiter = new RateLimiter({
      store: makeStore(frozen),
      policies: [smoothBursty({ limit: 1, window: 10 }), fixedWindow({ limit: 2, window: '1m' })],
      prefix: prefix(),
    });
    const first = await limiter.acquire('k');
    const second = await limiter.acquire('k');
    expect([first.delay, second.delay]).toEqual([0, 10]);
    expect(second.policies[1]).toMatchObject({ remaining: 0 });
    // The window is spent: the reservation is refused (retry after the minute passes maxWait).
    const third = await limiter.acquire('k', { maxWait: 100 });
    expect(third).toMatchObject({ allowed: false, policy: 'fixed-2-per-60s' });
    expect(third.policies[0]).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.peek('k')).toMatchObject({ retryAfter: 60_000 });
    expect((await limiter.peek('k')).policies[0]).toMatchObject({ retryAfter: 20 });
  });

  test('a cost no policy can ever admit resolves at once with retryAfter -1', async () => {
    const limiter = new RateLimiter({
      store: makeStore(frozen),
      policies: gcra({ limit: 2, window: '1s' }),
      prefix: prefix(),
    });
    expect(await limiter.acquire('k', { cost: 3 })).toMatchObject({
      allowed: false,
      retryAfter: -1,
    });
  });

  test.each([
    ['negative', -1],
    ['not a duration', 'later'],
    ['NaN', Number.NaN],
    ['an object', {}],
  ])('maxWait %s throws RateLimitArgumentError', async (_what, maxWait) => {
    const limiter = new RateLimiter({
      store: makeStore(frozen),
      policies: smoothBursty({ limit: 1, window: '1s' }),
      prefix: prefix(),
    });
    const error = await limiter.acquire('k', { maxWait: maxWait as never }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RateLimitArgumentError);
    expect((error as RateLimitArgumentError).argument).toBe('maxWait');
    // Nothing was charged: the new key's one free request is still there.
    expect(await limiter.peek('k', { cost: 0 })).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe('acquire retries other policies after retryAfter (fake timers and clock)', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  test('waits the denial retryAfter, then is admitted; maxWait shorter than that resolves denied', async () => {
    const store = memoryStore({ clock: () => Date.now() });
    const limiter = new RateLimiter({
      store,
      policies: tokenBucket({ limit: 1, window: 100 }),
      prefix: prefix(),
    });
    expect((await limiter.acquire('k')).allowed).toBe(true);
    expect(await limiter.acquire('k', { maxWait: 99 })).toMatchObject({
      allowed: false,
      retryAfter: 100,
    });
    let settled: Decision | undefined;
    void limiter.acquire('k', { maxWait: 100 }).then((d) => {
      settled = d;
    });
    await jest.advanceTimersByTimeAsync(99);
    expect(settled).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    expect(settled).toMatchObject({ allowed: true, remaining: 0 });
  });

  test('retries as often as needed, in order, without passing maxWait', async () => {
    const limiter = new RateLimiter({
      store: memoryStore({ clock: () => Date.now() }),
      policies: fixedWindow({ limit: 1, window: 50 }),
      prefix: prefix(),
    });
    const order: number[] = [];
    const calls = [0, 1, 2].map((i) =>
      limiter.acquire('k', { maxWait: 120 }).then((d) => {
        order.push(i);
        return d;
      }),
    );
    await jest.advanceTimersByTimeAsync(99);
    expect(order).toEqual([0, expect.any(Number)]);
    await jest.advanceTimersByTimeAsync(1);
    const decisions = await Promise.all(calls);
    // One per 50 ms window (at 0, 50 and 100): all three fit in 120 ms.
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true]);
    expect(order).toHaveLength(3);
    // The window at 100 is spent: waiting 50 ms would pass a 10 ms maxWait.
    expect(await limiter.acquire('k', { maxWait: 10 })).toMatchObject({
      allowed: false,
      retryAfter: 50,
    });
  });
});

describe('acquire from two processes on one Redis key', () => {
  test('reservations from two limiters on two connections queue without overlap', async () => {
    const policies = [smoothBursty({ limit: 1, window: 10 })];
    const make = (client: Redis) =>
      new RateLimiter({ store: redisStore({ client, clock: frozen }), policies, prefix: 'shared' });
    const a = make(redis);
    const b = make(other);
    const decisions = await Promise.all([
      a.acquire('k'),
      b.acquire('k'),
      a.acquire('k'),
      b.acquire('k'),
      a.acquire('k'),
      b.acquire('k'),
    ]);
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // Six distinct slots, one stable interval apart, whichever process got which.
    expect(decisions.map((d) => d.delay).sort((x, y) => x - y)).toEqual([0, 10, 20, 30, 40, 50]);
    const keys = await keysWithTtl(redis);
    expect(keys).toHaveLength(1);
    expect(keys[0]!.pttl).toBeGreaterThan(0);
  });

  test('an ioredis and a node-redis client reserve on the same key', async () => {
    const client = createClient({ url: testRedisUrl(), database: workerDb() });
    await client.connect();
    try {
      const policies = [smoothWarmingUp({ limit: 100, window: '1s', warmup: 20, coldFactor: 1 })];
      const a = new RateLimiter({
        store: redisStore({ client: redis, clock: frozen }),
        policies,
        prefix: 'mixed',
      });
      const b = new RateLimiter({
        store: redisStore({ client, clock: frozen }),
        policies,
        prefix: 'mixed',
      });
      const decisions = await Promise.all([a.acquire('k'), b.acquire('k'), a.acquire('k')]);
      expect(decisions.map((d) => d.delay).sort((x, y) => x - y)).toEqual([0, 10, 20]);
    } finally {
      await client.quit();
    }
  });

  test('with Redis TIME (no injected clock) every acquire is admitted exactly once per slot', async () => {
    const policies = [smoothBursty({ limit: 1, window: 5, maxBurst: 0 })];
    const make = (client: Redis) =>
      new RateLimiter({ store: redisStore({ client }), policies, prefix: 'time' });
    const a = make(redis);
    const b = make(other);
    const decisions = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).acquire('k', { maxWait: '10s' })),
    );
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // Each reservation pushed next-free 5 ms on: at least one of them had to wait.
    expect(decisions.some((d) => d.delay > 0)).toBe(true);
  });
});

describe('reserve mode: Lua and twin agree on random traces', () => {
  const step = fc.record({
    advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400_000 })),
    cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 6 })),
    slack: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2_000_000 })),
    // When set, slack is the wait a plain consume would be told, plus this: hits the boundary.
    nearWait: fc.option(fc.integer({ min: -1, max: 1 }), { nil: undefined }),
  });
  const policySet = fc
    .array(fc.oneof(...ALGORITHM_CASES.map((c) => c.arbitrary)), { minLength: 1, maxLength: 3 })
    .map((list) => list.filter((p, i) => list.findIndex((q) => q.id === p.id) === i));

  test('every decision is identical, field for field', async () => {
    let trace = 0;
    await fc.assert(
      fc.asyncProperty(
        policySet,
        fc.array(step, { minLength: 1, maxLength: 40 }),
        async (policies: Policy[], steps) => {
          let now = T0 * 1000 + trace * 7;
          const clock = () => now / 1000;
          const keys = [...policies.map((p) => `rsv${trace}:{k}:${p.id}`), `rsv${trace}:{k}:block`];
          trace++;
          const memory = memoryStore({ clock }).prepare(policies);
          const lua = redisStore({ client: redis, clock }).prepare(policies);
          for (const s of steps) {
            now += s.advance;
            let slack = s.slack;
            if (s.nearWait !== undefined) {
              const told = await memory.decide(keys, Math.max(s.cost, 1), true);
              const wait = Math.max(0, ...told.results.map((x) => x.retryAfter));
              slack = Math.max(0, wait + s.nearWait);
            }
            const [m, r] = await Promise.all([
              memory.reserve!(keys, s.cost, slack),
              lua.reserve!(keys, s.cost, slack),
            ]);
            const fields = (d: StoreDecision) => ({
              admitted: d.admitted,
              results: d.results.map(({ allowed, remaining, resetAfter, retryAfter, delay }) => ({
                allowed,
                remaining,
                resetAfter,
                retryAfter,
                delay,
              })),
            });
            expect(fields(r)).toEqual(fields(m));
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
