/**
 * Slips the library catches: a Redis client passed where its options belong, and
 * a number passed where a call's options belong. (Mounting a middleware factory without calling
 * it is covered in packages/express/test/slips.test.ts and packages/koa/test/slips.test.ts.)
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { useTestRedis } from '../../../../test/harness/redis';
import { helpUrl } from '../../src/errors';
import {
  fixedWindow,
  memoryStore,
  RateLimitArgumentError,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
} from '../../src/index';

const testRedis = useTestRedis();

describe('redisStore(client) instead of redisStore({ client })', () => {
  it.each([
    ['an ioredis Redis', () => new Redis({ lazyConnect: true })],
    ['a node-redis client', () => createClient()],
  ])('%s is recognised and the message says what to write', (kind, make) => {
    const client = make();
    let error: unknown;
    try {
      redisStore(client as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect(error).toMatchObject({ code: 'FLOODGATE_INVALID_OPTION', field: 'redisStore' });
    expect((error as Error).message).toBe(
      `redisStore() takes an options object, and was given ${kind} itself: write redisStore({ client }) (help: ${helpUrl('FLOODGATE_INVALID_OPTION')})`,
    );
    if (client instanceof Redis) client.disconnect();
  });

  it('the right call still works', () => {
    expect(redisStore({ client: testRedis() }).kind).toBe('redis');
  });
});

describe.each([
  ['memory', () => memoryStore()],
  ['redis', () => redisStore({ client: testRedis() })],
])('a non-object options argument on the %s store', (_name, makeStore) => {
  const limiter = () =>
    new RateLimiter({ store: makeStore(), policies: fixedWindow({ limit: 5, window: '1m' }) });

  it.each([2, '2', true, null, [2]])('consume/peek/acquire(key, %p) is an error', async (bad) => {
    const l = limiter();
    for (const call of [
      () => l.consume('k', bad as never),
      () => l.peek('k', bad as never),
      () => l.acquire('k', bad as never),
    ]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RateLimitArgumentError);
      expect(error).toMatchObject({ argument: 'options', value: bad });
    }
    // Nothing was charged by the refused calls.
    expect((await l.peek('k', { cost: 0 })).remaining).toBe(5);
  });

  it('says what to write', async () => {
    await expect(limiter().consume('k', 2 as never)).rejects.toThrow(
      'the options argument must be an object such as { cost: 2 }, got 2',
    );
  });
});
