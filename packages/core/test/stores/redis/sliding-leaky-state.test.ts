/**
 * slidingWindow and leakyBucket on real Redis: the stored state is the documented string with
 * every digit of every number, every key gets a TTL no longer than its state needs, and a
 * denied request, a peek or cost 0 writes nothing.
 */
import { keysWithTtl, useTestRedis } from '../../../../../test/harness/redis';
import {
  leakyBucket,
  type Policy,
  RateLimiter,
  redisStore,
  slidingWindow,
} from '../../../src/index';
import { INJECTED_CLOCK_TTL_SLACK_MS } from '../../../src/stores/redis';
import { limiterAt, onlyKey, T0 } from './redis-state';

const testRedis = useTestRedis();
const at = (policy: Policy, time: { now: number }) => limiterAt(testRedis(), policy, time, 'sl');
describe('slidingWindow state', () => {
  test('is "<sub-window index>:<counts newest first>", exact even for a 1 µs sub-window', async () => {
    const time = { now: T0 + 0.007 };
    // 1 µs sub-windows: the index is the time in µs, 16 digits.
    const limiter = at(slidingWindow({ limit: 5, window: '10us' }), time);
    await limiter.consume('u', { cost: 2 });
    time.now = T0 + 0.009;
    await limiter.consume('u');
    const { value } = await onlyKey(testRedis());
    expect(value).toBe(`${T0 * 1000 + 9}:1,0,2`);
  });

  test('TTL is until the newest count leaves the window (plus the injected-clock slack)', async () => {
    const time = { now: T0 + 300 };
    const limiter = at(slidingWindow({ limit: 5, window: '1s', buckets: 4 }), time);
    const decision = await limiter.consume('u');
    // Sub-window [250, 500) leaves the window at 1250: 950 ms from now.
    expect(decision.resetAfter).toBe(950);
    const { pttl, value } = await onlyKey(testRedis());
    expect(value).toBe(`${(T0 * 1000 + 300_000 - ((T0 * 1000 + 300_000) % 250_000)) / 250_000}:1`);
    expect(pttl).toBeLessThanOrEqual(950 + INJECTED_CLOCK_TTL_SLACK_MS);
    expect(pttl).toBeGreaterThan(950 + INJECTED_CLOCK_TTL_SLACK_MS - 1000);
  });

  test('with Redis TIME no key outlives its window', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: testRedis() }),
      policies: [slidingWindow({ limit: 3, window: '2s', buckets: 4 })],
    });
    for (let i = 0; i < 12; i++) await limiter.consume(`u${i % 3}`, { cost: 1 + (i % 2) });
    const keys = await keysWithTtl(testRedis());
    expect(keys).toHaveLength(3);
    for (const { pttl } of keys) {
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(2000);
    }
  });
});

describe('leakyBucket state', () => {
  test('is nginx\'s node "<excess units>:<last µs>", every digit kept', async () => {
    const time = { now: T0 + 0.001 };
    // 3 per second: one request is 1_000_000 units draining 3 per µs.
    const limiter = at(leakyBucket({ limit: 3, window: '1s', burst: 2 }), time);
    await limiter.consume('u', { cost: 2 });
    expect((await onlyKey(testRedis())).value).toBe(`1000000:${T0 * 1000 + 1}`);
    time.now = T0 + 100.001;
    // Drained 300_000 units in 100 ms: excess 1_000_000 + 1_000_000 - 300_000, floor at 0 not hit.
    await limiter.consume('u');
    expect((await onlyKey(testRedis())).value).toBe(`1700000:${T0 * 1000 + 100_001}`);
  });

  test('TTL is until the bucket is idle again (plus the injected-clock slack)', async () => {
    const time = { now: T0 };
    const limiter = at(leakyBucket({ limit: 10, window: '1s', burst: 4, delay: 0 }), time);
    let decision = await limiter.consume('u');
    decision = await limiter.consume('u');
    expect(decision).toMatchObject({ allowed: true, delay: 100, resetAfter: 200 });
    const { pttl } = await onlyKey(testRedis());
    expect(pttl).toBeLessThanOrEqual(200 + INJECTED_CLOCK_TTL_SLACK_MS);
    expect(pttl).toBeGreaterThan(200 + INJECTED_CLOCK_TTL_SLACK_MS - 1000);
  });
});

describe.each([
  ['slidingWindow', () => slidingWindow({ limit: 2, window: '1m', buckets: 6 })],
  ['leakyBucket', () => leakyBucket({ limit: 2, window: '1m', burst: 1, delay: 0 })],
])('%s writes nothing unless it admits a cost', (_name, policy) => {
  test('denied, peek and cost 0 leave the state and its TTL as they were', async () => {
    const time = { now: T0 + 1000 };
    const limiter = at(policy(), time);
    await limiter.consume('u', { cost: 2 });
    const before = await onlyKey(testRedis());
    time.now += 10;
    expect((await limiter.consume('u')).allowed).toBe(false);
    expect((await limiter.peek('u')).allowed).toBe(false);
    expect((await limiter.consume('u', { cost: 0 })).allowed).toBe(true);
    const after = await onlyKey(testRedis());
    expect(after.value).toBe(before.value);
    expect(after.pttl).toBeLessThanOrEqual(before.pttl);
    // A fresh key is not created by a read either.
    await limiter.peek('other', { cost: 1 });
    await limiter.consume('other', { cost: 0 });
    expect(await keysWithTtl(testRedis())).toHaveLength(1);
  });
});
