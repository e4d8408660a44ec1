/**
 * `ban` (@fastify/rate-limit's `ban`): a key denied `after` times within `window` is blocked
 * for `duration` and its decisions say reason 'banned'; a lockout stays 'blocked'; unblock and
 * reset lift a ban. Memory store and Redis, on a clock the test moves.
 */

import { configErrorOf } from '@floodgate/http-test-kit';
import { Redis } from 'ioredis';
import { flushRedis, testRedisUrl, workerDb } from '../../../../test/harness/redis';
import { fixedWindow, memoryStore, RateLimiter, redisStore, type Store } from '../../src/index';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(testRedisUrl(), { db: workerDb() });
});
afterAll(async () => {
  await redis.quit();
});

let now = 0;
const clock = () => now;
const STORES: [string, () => Store][] = [
  ['memory', () => memoryStore({ clock })],
  ['redis', () => redisStore({ client: redis, clock, batch: false })],
];
let run = 0;

describe.each(STORES)('ban on the %s store', (name, makeStore) => {
  beforeEach(async () => {
    now = 1_700_000_000_000;
    if (name === 'redis') await flushRedis(redis);
  });
  const limiterWith = (extra: object = {}) =>
    new RateLimiter({
      store: makeStore(),
      prefix: `ban${run++}`,
      policies: fixedWindow({ limit: 1, window: '1m', name: 'per-minute' }),
      ban: { after: 3, window: '1m', duration: '10m' },
      ...extra,
    });

  it('the after-th denial within the window bans the key for duration', async () => {
    const limiter = limiterWith();
    expect((await limiter.consume('k')).allowed).toBe(true);
    for (let i = 0; i < 2; i++) {
      const denied = await limiter.consume('k');
      expect(denied.allowed).toBe(false);
      expect(denied.reason).toBeUndefined();
      now += 1000;
    }
    expect(await limiter.consume('k')).toMatchObject({
      allowed: false,
      reason: 'banned',
      retryAfter: 600_000,
    });
    // Banned past the rate window, for peeks too; other keys are not.
    now += 120_000;
    expect(await limiter.consume('k')).toMatchObject({ reason: 'banned', retryAfter: 480_000 });
    expect(await limiter.peek('k')).toMatchObject({ allowed: false, reason: 'banned' });
    expect((await limiter.consume('other')).allowed).toBe(true);
    now += 480_000;
    expect(await limiter.consume('k')).toMatchObject({ allowed: true });
  });

  it('denials spread over more than the window never ban', async () => {
    const limiter = limiterWith();
    for (let i = 0; i < 6; i++) {
      const d = await limiter.consume('k');
      expect(d.reason).toBeUndefined();
      // One admitted and one denied per minute: never 3 denials in one.
      if (i % 2 === 1) now += 61_000;
    }
  });

  it('peeks are not counted; unblock and reset lift a ban', async () => {
    const limiter = limiterWith();
    await limiter.consume('k');
    for (let i = 0; i < 5; i++) expect((await limiter.peek('k')).reason).toBeUndefined();
    for (let i = 0; i < 3; i++) await limiter.consume('k');
    expect((await limiter.peek('k')).reason).toBe('banned');
    await limiter.unblock('k');
    // The count was forgotten with the ban: two more denials do not ban again.
    expect((await limiter.consume('k')).reason).toBeUndefined();
    expect((await limiter.consume('k')).reason).toBeUndefined();
    expect((await limiter.consume('k')).reason).toBe('banned');
    await limiter.reset('k');
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  it('a lockout and a block by hand stay reason blocked', async () => {
    const limiter = new RateLimiter({
      store: makeStore(),
      prefix: `ban${run++}`,
      policies: fixedWindow({ limit: 1, window: '1m', blockDuration: '5m' }),
      ban: { after: 5, window: '1m', duration: '1h' },
    });
    await limiter.consume('k');
    expect((await limiter.consume('k')).reason).toBe('blocked');
    await limiter.block('hand', '1m');
    expect((await limiter.consume('hand')).reason).toBe('blocked');
  });
});

describe('ban options', () => {
  it('names the field of a bad value', () => {
    const policies = fixedWindow({ limit: 1, window: '1m' });
    const build = (ban: unknown) => () =>
      new RateLimiter({ store: memoryStore(), policies, ban: ban as never });
    expect(configErrorOf(build({ after: 0, window: '1m', duration: '1m' })).field).toBe(
      'RateLimiter.ban.after',
    );
    expect(configErrorOf(build({ after: 2, window: 'soon', duration: '1m' })).field).toBe(
      'RateLimiter.ban.window',
    );
    expect(configErrorOf(build({ after: 2, window: '1m', duration: -1 })).field).toBe(
      'RateLimiter.ban.duration',
    );
    expect(configErrorOf(build({ after: 2, window: '1m' })).field).toBe('RateLimiter.ban.duration');
    expect(configErrorOf(build({ after: 2, window: '1m', duration: '1m', for: 1 })).field).toBe(
      'RateLimiter.ban.for',
    );
  });
});
