/**
 * Live limits in the randomized differential test: random traces that also change limits
 * (setLimit with random overrides, carry modes and ttls; clearLimit) fed to the Lua scripts'
 * live variants on real Redis and to the twins in memory: every decision must be identical.
 */
import { Redis } from 'ioredis';
import { flushRedis } from '../../../../test/harness/redis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server';
import { redisStore } from '../../src/index';
import { runDifferential } from '../../src/testing/index';

let server: RedisServerHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
  await flushRedis(redis);
});
afterAll(async () => {
  await redis.quit();
  await server.stop();
});

test.each([1, 2, 3])(
  'live limits: Lua and twins agree on random traces (seed %i)',
  async (seed) => {
    const report = await runDifferential({
      store: (clock) => redisStore({ client: redis, clock, batch: false }),
      liveLimits: true,
      runs: 60,
      steps: 40,
      seed,
    });
    expect(report.failure).toBeUndefined();
    expect(report.decisions).toBe(60 * 40);
  },
  60_000,
);
