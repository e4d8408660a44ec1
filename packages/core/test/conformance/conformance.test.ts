/** The scenario table against both stores: the memory twins and the Lua scripts on real Redis. */
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis';
import { memoryStore, redisStore } from '../../src/index';
import { SCENARIOS } from './algorithms/index';
import { describeConformance } from './table';

let redis: Redis;
beforeAll(() => {
  redis = connectIoredis();
});
beforeEach(async () => {
  await flushRedis(redis);
});
afterAll(async () => {
  await redis.quit();
});

describeConformance('memory store', SCENARIOS, (clock) => memoryStore({ clock }));
describeConformance('redis store (ioredis)', SCENARIOS, (clock) =>
  redisStore({ client: redis, clock }),
);
