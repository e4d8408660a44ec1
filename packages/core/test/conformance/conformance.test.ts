/** The scenario table against both stores: the memory twins and the Lua scripts on real Redis. */
import { useTestRedis } from '../../../../test/harness/redis';
import { memoryStore, redisStore } from '../../src/index';
import { SCENARIOS } from './algorithms/index';
import { describeConformance } from './table';

const testRedis = useTestRedis();

describeConformance('memory store', SCENARIOS, (clock) => memoryStore({ clock }));
describeConformance('redis store (ioredis)', SCENARIOS, (clock) =>
  redisStore({ client: testRedis(), clock, batch: false }),
);
describeConformance(
  'redis store (ioredis), batched',
  SCENARIOS,
  (clock) => redisStore({ client: testRedis(), clock, batch: { maxDecisions: 4 } }),
  'at once',
);
