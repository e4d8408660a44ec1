/**
 * fixedWindow's Redis layouts: one integer at the base key, index · (limit + 1) + used,
 * whenever that is exact for every time below 2^53 µs (72 bytes for a short key); otherwise the
 * count at a key named after the window. Either way a count is only read in its own window.
 */
import { keysWithTtl, useTestRedis } from '../../../../../test/harness/redis';
import { packsIntoOneInteger } from '../../../src/algorithms/fixed-window';
import { fixedWindow, type Policy, RateLimiter, redisStore } from '../../../src/index';
import { INJECTED_CLOCK_TTL_SLACK_MS } from '../../../src/stores/redis';
import { configErrorOf } from '../../config-error';
import { limiterAt, onlyKey, T0 } from './redis-state';

const testRedis = useTestRedis();
const at = (policy: Policy, time: { now: number }) => limiterAt(testRedis(), policy, time, 'fw');
describe('the layout is chosen once per policy', () => {
  test('one integer while (limit + 1) · (windows below 2^53 µs) ≤ 2^53', () => {
    // 2^53 µs / 60 s ≈ 1.5e8 windows: limits up to just under 6e7 per minute pack.
    expect(packsIntoOneInteger(100, 60_000_000)).toBe(true);
    expect(packsIntoOneInteger(59_999_000, 60_000_000)).toBe(true);
    expect(packsIntoOneInteger(60_000_000, 60_000_000)).toBe(false);
    expect(packsIntoOneInteger(1, 1)).toBe(false);
    expect(packsIntoOneInteger(1, 2)).toBe(true);
    expect(packsIntoOneInteger(Number.MAX_SAFE_INTEGER, 86_400_000_000)).toBe(false);
    expect(fixedWindow({ limit: 100, window: '1m' }).params).toEqual([100, 60_000_000, 1]);
    expect(fixedWindow({ limit: 1e9, window: '1m' }).params).toEqual([1e9, 60_000_000, 0]);
  });

  test('the boundary is exact: the largest index and count of a packed policy stay below 2^53', () => {
    for (const window of [1, 2, 3, 7, 1_000, 60_000_000, 86_400_000_000]) {
      // The largest limit that packs, found by bisection, and the next one, which must not.
      let lo = 1;
      let hi = Number.MAX_SAFE_INTEGER;
      while (lo < hi) {
        const mid = lo + Math.ceil((hi - lo) / 2);
        if (packsIntoOneInteger(mid, window)) lo = mid;
        else hi = mid - 1;
      }
      if (!packsIntoOneInteger(lo, window)) continue; // window 1: nothing packs
      const maxIndex = BigInt(Math.floor(Number.MAX_SAFE_INTEGER / window));
      const largest = maxIndex * BigInt(lo + 1) + BigInt(lo);
      expect(largest <= BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
      expect(packsIntoOneInteger(lo + 1, window)).toBe(false);
    }
  });
});

describe('packed: one integer at the base key', () => {
  test('holds index · (limit + 1) + used, 72 bytes in Redis, TTL until the window ends', async () => {
    const time = { now: T0 + 250 };
    const limiter = at(fixedWindow({ limit: 5, window: '1s' }), time);
    await limiter.consume('user:12345', { cost: 2 });
    const { key, value } = await onlyKey(testRedis());
    expect(key).toBe(`fw:{user:12345}:${limiter.policies[0]!.id}`);
    expect(value).toBe(String((T0 / 1000) * 6 + 2));
    expect(await testRedis().memory('USAGE', key, 'SAMPLES', 0)).toBeLessThanOrEqual(72);
  });

  test('a count is never read in another window, forwards or backwards', async () => {
    const time = { now: T0 + 100 };
    const limiter = at(fixedWindow({ limit: 3, window: '1s' }), time);
    expect((await limiter.consume('u', { cost: 3 })).remaining).toBe(0);
    expect((await limiter.consume('u')).allowed).toBe(false);
    // The clock jumps back a window (say, a failover to a server whose clock lags): the stored
    // count belongs to a window that has not begun there, so it is not this window's count.
    time.now = T0 - 500;
    expect(await limiter.peek('u')).toMatchObject({ allowed: true, remaining: 2 });
    // And forwards, while the key still lives (the injected clock's TTL slack keeps it).
    time.now = T0 + 1_100;
    expect(await limiter.consume('u')).toMatchObject({ allowed: true, remaining: 2 });
    time.now = T0 + 1_200;
    expect(await limiter.consume('u')).toMatchObject({ allowed: true, remaining: 1 });
  });

  test('a value that is not a count (a foreign write) counts as nothing', async () => {
    const time = { now: T0 + 100 };
    const limiter = at(fixedWindow({ limit: 3, window: '1s' }), time);
    await limiter.consume('u');
    const { key } = await onlyKey(testRedis());
    await testRedis().set(key, 'garbage', 'PX', 10_000);
    expect(await limiter.consume('u')).toMatchObject({ allowed: true, remaining: 2 });
  });

  test('reset deletes the key', async () => {
    const time = { now: T0 + 100 };
    const limiter = at(fixedWindow({ limit: 3, window: '1s' }), time);
    await limiter.consume('u', { cost: 3 });
    await limiter.reset('u');
    expect(await keysWithTtl(testRedis())).toEqual([]);
    expect((await limiter.consume('u')).remaining).toBe(2);
  });
});

describe('unpacked (limits too large for one integer): the count at <base>:<window index>', () => {
  test('is named after the window and holds the count alone', async () => {
    const time = { now: T0 + 250 };
    const policy = fixedWindow({ limit: 1e12, window: '1s' });
    const limiter = at(policy, time);
    await limiter.consume('u', { cost: 7 });
    const { key, value } = await onlyKey(testRedis());
    expect(key).toBe(`fw:{u}:${policy.id}:${T0 / 1000}`);
    expect(value).toBe('7');
    await limiter.reset('u');
    expect(await keysWithTtl(testRedis())).toEqual([]);
  });

  test('with Redis TIME, counts up to the limit exactly', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: testRedis() }),
      policies: fixedWindow({ limit: 2 ** 52, window: '1h' }),
      prefix: 'fw',
    });
    const first = await limiter.consume('u', { cost: 2 ** 52 - 1 });
    // A window edge may pass between the two calls: then the second starts a new window.
    const second = await limiter.consume('u');
    expect(first).toMatchObject({ allowed: true, remaining: 1 });
    expect(second.allowed).toBe(true);
    expect([0, 2 ** 52 - 1]).toContain(second.remaining);
  });
});

describe("anchor 'first-request': '<window end µs>:<used>' at the base key", () => {
  const fromFirst = (limit: number, window: '1s' | '1h') =>
    fixedWindow({ limit, window, anchor: 'first-request' });

  test("anchor 'clock' is today's policy: same parameters, same id; the anchors never share state", () => {
    const clock = fixedWindow({ limit: 100, window: '1m' });
    expect(fixedWindow({ limit: 100, window: '1m', anchor: 'clock' })).toEqual(clock);
    expect(clock.params).toEqual([100, 60_000_000, 1]);
    const first = fromFirst(100, '1h');
    expect(first.params).toEqual([100, 3_600_000_000, 2]);
    expect(fixedWindow({ limit: 100, window: '1h' }).id).not.toBe(first.id);
    expect(first.name).toBe('fixed-100-per-3600s-first-request');
  });

  test('the window ends where the first admitted request put it; later writes keep that end and TTL', async () => {
    const time = { now: T0 + 250.5 };
    const policy = fromFirst(5, '1s');
    const limiter = at(policy, time);
    const end = (T0 + 250.5) * 1000 + 1_000_000;
    await limiter.consume('user:12345', { cost: 2 });
    const first = await onlyKey(testRedis());
    expect(first.key).toBe(`fw:{user:12345}:${policy.id}`);
    expect(first.value).toBe(`${end}:2`);
    time.now += 600;
    await limiter.consume('user:12345');
    const second = await onlyKey(testRedis());
    expect(second.value).toBe(`${end}:3`);
    // 399.5 ms of the window are left (rounded up), plus the injected clock's slack: the TTL
    // was not stretched to a whole window by the second write.
    expect(second.pttl).toBeLessThanOrEqual(400 + INJECTED_CLOCK_TTL_SLACK_MS);
    await limiter.refund('user:12345', { cost: 3 });
    expect((await onlyKey(testRedis())).value).toBe(`${end}:0`);
    await limiter.reset('user:12345');
    expect(await keysWithTtl(testRedis())).toEqual([]);
  });

  test('with Redis TIME the key expires when its window ends', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: testRedis() }),
      policies: fromFirst(3, '1h'),
      prefix: 'fw',
    });
    expect(await limiter.consume('u')).toMatchObject({ allowed: true, resetAfter: 3_600_000 });
    const { pttl } = await onlyKey(testRedis());
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(3_600_000);
  });

  test('a value that is not a window (a foreign write) counts as nothing', async () => {
    const time = { now: T0 + 100 };
    const limiter = at(fromFirst(3, '1s'), time);
    await limiter.consume('u');
    const { key } = await onlyKey(testRedis());
    await testRedis().set(key, 'garbage', 'PX', 10_000);
    expect(await limiter.consume('u')).toMatchObject({ remaining: 2, resetAfter: 1000 });
  });

  test('an anchor other than the two is a configuration error naming the field', () => {
    const error = configErrorOf(() =>
      fixedWindow({ limit: 1, window: '1s', anchor: 'first' as 'clock' }),
    );
    expect(error.field).toBe('fixedWindow.anchor');
    expect(error.message).toContain('"first"');
  });
});
