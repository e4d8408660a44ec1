/**
 * `limiter.hotKeys()` and `limiter.deniedKeys()` on both stores (a real Redis for redisStore):
 * the keys taking the most decisions and the keys denied most, peeks not counted, store-failure
 * denials not counted as "limited", the option validated like every option, and `false` off.
 */
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis';
import {
  fixedWindow,
  memoryStore,
  RateLimitArgumentError,
  RateLimitConfigError,
  RateLimiter,
  type RateLimiterOptions,
  redisStore,
  type Store,
} from '../../src/index';

let redis: Redis;
beforeAll(() => {
  redis = connectIoredis();
});
beforeEach(() => flushRedis(redis));
afterAll(() => redis.quit());

const stores: [string, (clock: () => number) => Store][] = [
  ['memoryStore', (clock) => memoryStore({ clock })],
  ['redisStore', (clock) => redisStore({ client: redis, clock })],
];

describe.each(stores)('hotKeys() and deniedKeys() on %s', (_name, makeStore) => {
  it('ranks keys by decisions and by denials, with rates per second', async () => {
    let now = 1_000_000;
    const clock = () => now;
    const limiter = new RateLimiter({
      store: makeStore(clock),
      policies: fixedWindow({ limit: 5, window: '1m' }),
      hotKeys: { halfLife: '1s', clock },
    });
    // In 1 s: 'tenant' 40 decisions (35 denied), 'crawler' 20 (15 denied), 30 quiet users.
    for (let ms = 0; ms < 1000; ms += 5) {
      now = 1_000_000 + ms;
      if (ms % 25 === 0) await limiter.consume('tenant');
      if (ms % 50 === 0) await limiter.consume('crawler');
      if (ms < 150) await limiter.consume(`user-${ms}`);
      await limiter.peek('tenant'); // reads are not traffic
    }
    now = 1_001_000;
    const hot = limiter.hotKeys(2);
    expect(hot.map((k) => k.key)).toEqual(['tenant', 'crawler']);
    expect(hot[0]?.rate).toBeCloseTo(40, 5); // 40 decisions in the 1 s watched
    expect(hot[0]?.share).toBeCloseTo(40 / 90, 5);
    expect(hot[0]?.error).toBe(0);
    const denied = limiter.deniedKeys();
    expect(denied.map((k) => k.key)).toEqual(['tenant', 'crawler']);
    expect(denied[0]?.rate).toBeCloseTo(35, 5);
    expect(denied[0]?.share).toBeCloseTo(35 / 50, 5);
    expect(limiter.hotKeys().length).toBe(10); // the default n
    expect(limiter.hotKeys(100).length).toBe(32);
    expect(limiter.hotKeys(0)).toEqual([]);
  });
});

describe('hotKeys option', () => {
  const base = (): RateLimiterOptions => ({
    store: memoryStore(),
    policies: fixedWindow({ limit: 1, window: '1m' }),
  });

  it('is on by default, and `false` turns it off', async () => {
    const on = new RateLimiter(base());
    await on.consume('a');
    await on.consume('a');
    expect(on.hotKeys()).toEqual([expect.objectContaining({ key: 'a', share: 1 })]);
    expect(on.deniedKeys()).toEqual([expect.objectContaining({ key: 'a', share: 1 })]);
    const off = new RateLimiter({ ...base(), hotKeys: false });
    await off.consume('a');
    await off.consume('a');
    expect(off.hotKeys()).toEqual([]);
    expect(off.deniedKeys()).toEqual([]);
  });

  it('does not count a store failure as limiting the key', async () => {
    const client = connectIoredis();
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: false }),
      policies: fixedWindow({ limit: 1, window: '1m' }),
      onStoreError: 'closed',
      timeout: 200,
    });
    client.disconnect();
    const d = await limiter.consume('victim');
    expect(d).toMatchObject({ allowed: false, reason: 'store-error' });
    expect(limiter.hotKeys().map((k) => k.key)).toEqual(['victim']);
    expect(limiter.deniedKeys()).toEqual([]);
  });

  it.each([
    [{ capacity: 0 }, 'RateLimiter.hotKeys.capacity'],
    [{ capacity: 1.5 }, 'RateLimiter.hotKeys.capacity'],
    [{ share: 0 }, 'RateLimiter.hotKeys.share'],
    [{ share: '5%' }, 'RateLimiter.hotKeys.share'],
    [{ halfLife: '1500us' }, 'RateLimiter.hotKeys.halfLife'],
    [{ halfLife: -1 }, 'RateLimiter.hotKeys.halfLife'],
    [{ clock: 5 }, 'RateLimiter.hotKeys.clock'],
    [{ clock: () => Number.NaN }, 'RateLimiter.hotKeys.clock'],
    [{ capacty: 8 }, 'RateLimiter.hotKeys.capacty'],
    ['on', 'RateLimiter.hotKeys'],
  ])('refuses hotKeys %p, naming %s', (hotKeys, field) => {
    const build = () => new RateLimiter({ ...base(), hotKeys: hotKeys as never });
    expect(build).toThrow(RateLimitConfigError);
    expect(build).toThrow(expect.objectContaining({ field }));
  });

  it('survives a clock that throws after construction: decisions go on, one warning', async () => {
    let broken = false;
    const clock = () => {
      if (broken) throw new Error('clock gone');
      return 1_000_000;
    };
    const limiter = new RateLimiter({ ...base(), hotKeys: { clock } });
    const warnings = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      broken = true;
      for (let i = 0; i < 200; i++) await limiter.consume(`k-${i % 3}`);
      expect(limiter.hotKeys(3)).toHaveLength(3);
      const codes = warnings.mock.calls.map((c) => (c[1] as { code?: string } | undefined)?.code);
      expect(codes).toEqual(['FLOODGATE_HOOK_ERROR']);
    } finally {
      warnings.mockRestore();
    }
  });

  it('refuses a bad n with a typed error', () => {
    const limiter = new RateLimiter(base());
    for (const n of [-1, 1.5, '3', Number.NaN]) {
      expect(() => limiter.hotKeys(n as number)).toThrow(RateLimitArgumentError);
      expect(() => limiter.deniedKeys(n as number)).toThrow(RateLimitArgumentError);
    }
  });
});
