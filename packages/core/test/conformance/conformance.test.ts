/** The scenario table against both stores: the memory twins and the Lua scripts on real Redis. */
import { Redis } from 'ioredis';
import { useTestRedis } from '../../../../test/harness/redis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server';
import { memoryStore, redisStore } from '../../src/index';
import { SCENARIOS } from './algorithms/index';
import { describeConformance } from './table';

const testRedis = useTestRedis();

// The batched table sends every step of a scenario at once and expects them decided in the
// order sent. Its own server: the suite's shared one has its script cache flushed by other jest
// workers, and a script another worker loads again between a NOSCRIPT reply and our EVAL re-send
// would let a later step of ours run before an earlier one (docs/reliability.md, batching).
let server: RedisServerHandle | undefined;
let own: Redis | undefined;
beforeAll(async () => {
  server = await startRedisServer();
  own = new Redis(server.url);
});
beforeEach(async () => {
  await own?.flushdb();
  await own?.script('FLUSH');
});
afterAll(async () => {
  await own?.quit();
  await server?.stop();
});

describeConformance('memory store', SCENARIOS, (clock) => memoryStore({ clock }));
describeConformance('redis store (ioredis)', SCENARIOS, (clock) =>
  redisStore({ client: testRedis(), clock, batch: false }),
);
describeConformance(
  'redis store (ioredis), batched',
  SCENARIOS,
  (clock) => redisStore({ client: own!, clock, batch: { maxDecisions: 4 } }),
  'at once',
);
