/**
 * `limiter.set(key, { used })` through the limiter: which policies refuse, the arguments, one
 * store call for every policy, and the store guard (failure policy, fallback store, breaker).
 * The algorithms' answers are in the conformance table (src/testing/scenarios/set.ts).
 */
import { Redis } from 'ioredis';
import { useTestRedis } from '../../../../test/harness/redis';
import { startRedisServer } from '../../../../test/harness/redis-server';
import {
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  RateLimitArgumentError,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
  type Store,
  slidingLog,
  tokenBucket,
} from '../../src/index';

const testRedis = useTestRedis();

const stores: Array<[string, () => Store]> = [
  ['memory', () => memoryStore()],
  ['redis', () => redisStore({ client: testRedis() })],
  ['redis (batch: false)', () => redisStore({ client: testRedis(), batch: false })],
];

let prefixes = 0;
const prefix = () => `set${process.pid}x${prefixes++}`;

describe.each(stores)('set on the %s store', (_name, makeStore) => {
  test.each([
    ['slidingLog', () => slidingLog({ limit: 5, window: '1m' })],
    ['leakyBucket', () => leakyBucket({ limit: 5, window: '1m', burst: 3 })],
  ])(
    'a limiter with a %s policy refuses set (FLOODGATE_NO_DEBT) and writes nothing',
    async (_kind, policy) => {
      const limiter = new RateLimiter({
        store: makeStore(),
        policies: [gcra({ limit: 5, window: '1m' }), policy()],
        prefix: prefix(),
      });
      const error = await limiter.set('k', { used: 2 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RateLimitConfigError);
      expect(error).toMatchObject({ code: 'FLOODGATE_NO_DEBT', field: 'policies[1]' });
      expect((await limiter.peek('k', { cost: 0 })).policies[0]).toMatchObject({ remaining: 5 });
    },
  );

  test.each([
    ['no options', undefined, 'options'],
    ['a number', 3, 'options'],
    ['used missing', {}, 'used'],
    ['a negative used', { used: -1 }, 'used'],
    ['a fractional used', { used: 1.5 }, 'used'],
    ['used as a string', { used: '3' }, 'used'],
    ['an unknown option', { used: 1, cost: 2 }, 'cost'],
  ])('%s is refused with a typed error naming it', async (_what, options, argument) => {
    const limiter = new RateLimiter({
      store: makeStore(),
      policies: tokenBucket({ limit: 10, window: '1m' }),
      prefix: prefix(),
    });
    const error = await limiter.set('k', options as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RateLimitArgumentError);
    expect(error).toMatchObject({ code: 'FLOODGATE_INVALID_ARGUMENT', argument });
    expect(await limiter.peek('k', { cost: 0 })).toMatchObject({ remaining: 10 });
  });

  test('an empty key is refused', async () => {
    const limiter = new RateLimiter({
      store: makeStore(),
      policies: tokenBucket({ limit: 10, window: '1m' }),
      prefix: prefix(),
    });
    await expect(limiter.set('', { used: 1 })).rejects.toBeInstanceOf(RangeError);
  });

  test('set answers a peek of cost 1 and later calls read what it wrote, on every key alone', async () => {
    const limiter = new RateLimiter({
      store: makeStore(),
      policies: [
        tokenBucket({ limit: 10, window: '1h' }),
        fixedWindow({ limit: 20, window: '1h' }),
      ],
      prefix: prefix(),
    });
    await limiter.consume('a', { cost: 5 });
    await limiter.consume('b', { cost: 5 });
    const d = await limiter.set('a', { used: 8 });
    expect(d.policies.map((p) => p.remaining)).toEqual([1, 11]);
    expect((await limiter.peek('a', { cost: 0 })).policies.map((p) => p.remaining)).toEqual([
      2, 12,
    ]);
    expect((await limiter.peek('b', { cost: 0 })).policies.map((p) => p.remaining)).toEqual([
      5, 15,
    ]);
  });
});

describe('set on Redis', () => {
  test('is one script call for every policy', async () => {
    // A server of its own: other test files' calls would show in the shared one's counts.
    const server = await startRedisServer();
    const redis = new Redis(server.url);
    const limiter = new RateLimiter({
      store: redisStore({ client: redis, batch: false }),
      policies: [
        tokenBucket({ limit: 100, window: '1h' }),
        fixedWindow({ limit: 50, window: '1h' }),
      ],
      prefix: prefix(),
    });
    const calls = async () => {
      const info = await redis.info('commandstats');
      let n = 0;
      for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
      return n;
    };
    await limiter.peek('k'); // the store's first call also reads its clock and memory settings
    const before = await calls();
    await limiter.set('k', { used: 30 });
    const after = await calls();
    redis.disconnect();
    await server.stop();
    expect(after - before).toBe(1);
  });

  test('a set the store cannot answer gets the failure policy, not an exception, and counts for the breaker', async () => {
    const client = new Redis(testRedis().options);
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: false }),
      policies: tokenBucket({ limit: 100, window: '1h' }),
      prefix: prefix(),
      onStoreError: 'closed',
      timeout: 200,
      circuitBreaker: { failureThreshold: 2, cooldown: '1m' },
    });
    await limiter.consume('k');
    client.disconnect();
    expect(await limiter.set('k', { used: 40 })).toMatchObject({
      allowed: false,
      reason: 'store-error',
    });
    await limiter.set('k', { used: 40 });
    expect(limiter.circuit).toBe('open');
  });

  test('a set reaches an onStoreError fallback store too', async () => {
    const client = new Redis(testRedis().options);
    const fallback = memoryStore();
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: false }),
      policies: tokenBucket({ limit: 100, window: '1h' }),
      prefix: prefix(),
      onStoreError: fallback,
      timeout: 200,
      circuitBreaker: false,
    });
    await limiter.consume('k');
    client.disconnect();
    // Answered by the fallback, which holds the 40 written.
    expect(await limiter.set('k', { used: 40 })).toMatchObject({ remaining: 59 });
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 59 });
  });
});
