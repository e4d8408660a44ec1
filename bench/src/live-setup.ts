/**
 * The live-limit benches' setup: a live limiter of `policies` on a redis-server of its own, for
 * `read` to read what the store writes (an override's stored value, the record for every key,
 * the storage keys), which the benches then send themselves.
 */
import { type Policy, RateLimiter, redisStore } from '@floodgate/core';
import { startRedisServer } from '@floodgate/redis-server';
import { Redis } from 'ioredis';

export async function readLiveStorage<T>(
  policies: Policy[],
  read: (limiter: RateLimiter, client: Redis) => Promise<T>,
): Promise<T> {
  const server = await startRedisServer();
  const client = new Redis(server.url);
  try {
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies,
      prefix: 'bench',
      liveLimits: true,
    });
    const found = await read(limiter, client);
    await limiter.close();
    return found;
  } finally {
    client.disconnect();
    await server.stop();
  }
}
