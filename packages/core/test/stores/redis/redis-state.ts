/**
 * Helpers for tests that look at what a policy stores in Redis: a one-policy limiter on an
 * injected clock, and the single key it left behind.
 */
import type { Redis } from 'ioredis';
import { keysWithTtl } from '../../../../../test/harness/redis';
import { type Policy, RateLimiter, redisStore } from '../../../src/index';

/** A day boundary in ms: a whole number of every window the tests use; as µs (1.7e15) it has
 * more digits than Lua's %.14g keeps. */
export const T0 = 1_699_977_600_000;

/** A limiter of one policy whose time is `time.now` (epoch ms). */
export function limiterAt(
  redis: Redis,
  policy: Policy,
  time: { now: number },
  prefix: string,
): RateLimiter {
  return new RateLimiter({
    store: redisStore({ client: redis, clock: () => time.now }),
    policies: [policy],
    prefix,
  });
}

/** The only key in the database, its TTL and its string value (fails if there is not one). */
export async function onlyKey(
  redis: Redis,
): Promise<{ key: string; pttl: number; value: string | null }> {
  const keys = await keysWithTtl(redis);
  expect(keys).toHaveLength(1);
  const { key, pttl } = keys[0]!;
  return { key, pttl, value: await redis.get(key) };
}
