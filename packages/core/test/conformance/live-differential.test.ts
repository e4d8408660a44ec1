/**
 * Live limits in the randomized differential test: random traces that also change limits
 * (setLimit with random overrides, carry modes and ttls; clearLimit), of one key or of every key
 * ('*'), fed to the Lua scripts' live variants on real Redis and to the twins in memory: every
 * decision must be identical, and so must getLimit('*') after each change of every key. On Redis
 * a change of every key reaches other processes by their poll; here the limiter that makes it
 * decides next, and it holds the record it wrote at once, so no step waits for a poll.
 */
import { Redis } from 'ioredis';
import { flushRedis } from '../../../../test/harness/redis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server';
import { redisStore, type Store } from '../../src/index';
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

/** `store`, counting the changes of every key its limiters make. */
function countingEveryKey(store: Store, count: () => void): Store {
  const prepare = store.prepare.bind(store);
  return Object.assign(Object.create(store) as Store, {
    prepare: (...args: Parameters<Store['prepare']>) => {
      const prepared = prepare(...args);
      const change = prepared.changeGlobal;
      if (change === undefined) return prepared;
      return {
        ...prepared,
        changeGlobal: (...c: Parameters<typeof change>) => {
          count();
          return change(...c);
        },
      };
    },
  });
}

test.each([1, 2, 3])(
  'live limits: Lua and twins agree on random traces (seed %i)',
  async (seed) => {
    let everyKey = 0;
    const report = await runDifferential({
      store: (clock) =>
        countingEveryKey(redisStore({ client: redis, clock, batch: false }), () => everyKey++),
      liveLimits: true,
      runs: 60,
      steps: 40,
      seed,
    });
    expect(report.failure).toBeUndefined();
    expect(report.decisions).toBe(60 * 40);
    // The traces changed every key's limits many times (setLimit('*') and clearLimit('*')).
    expect(everyKey).toBeGreaterThan(50);
  },
  60_000,
);
