/**
 * Random traces — time steps, keys, costs, peeks and resets over random policy sets — fed to
 * the Lua scripts on real Redis and to the TypeScript twins in memory: every decision must be
 * identical, field for field.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis';
import { type Decision, memoryStore, type Policy, RateLimiter, redisStore } from '../../src/index';
import { ALGORITHM_CASES } from './algorithms/index';
import { fakeClock, T0 } from './table';

let redis: Redis;
beforeAll(async () => {
  redis = connectIoredis();
  await flushRedis(redis);
});
afterAll(async () => {
  await redis.quit();
});

interface TraceStep {
  /** Microseconds to advance the clock before this call. */
  advance: number;
  key: number;
  cost: number;
  op: 'consume' | 'peek' | 'reset';
}

const step: fc.Arbitrary<TraceStep> = fc.record({
  advance: fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 400_000 }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 3_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: 400_000, max: 5_000_000 }) },
  ),
  key: fc.integer({ min: 0, max: 2 }),
  cost: fc.oneof(
    { weight: 6, arbitrary: fc.constant(1) },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 9 }) },
  ),
  op: fc.oneof(
    { weight: 12, arbitrary: fc.constant('consume' as const) },
    { weight: 3, arbitrary: fc.constant('peek' as const) },
    { weight: 1, arbitrary: fc.constant('reset' as const) },
  ),
});

/** Policies with distinct ids (the limiter refuses duplicates), named to keep names unique. */
function policySet(arbitraries: fc.Arbitrary<Policy>[], max: number): fc.Arbitrary<Policy[]> {
  return fc
    .array(fc.oneof(...arbitraries), { minLength: 1, maxLength: max })
    .map((list) => list.filter((p, i) => list.findIndex((q) => q.id === p.id) === i));
}

let run = 0;

async function runTrace(policies: Policy[], trace: TraceStep[]): Promise<void> {
  const time = fakeClock(T0 + (run % 7) * 123.456);
  const prefix = `diff${run++}`;
  const memory = new RateLimiter({ store: memoryStore({ clock: time.clock }), policies, prefix });
  const lua = new RateLimiter({
    store: redisStore({ client: redis, clock: time.clock }),
    policies,
    prefix,
  });
  for (const [i, s] of trace.entries()) {
    time.now += s.advance / 1000;
    const key = `k${s.key}`;
    if (s.op === 'reset') {
      await Promise.all([memory.reset(key), lua.reset(key)]);
      continue;
    }
    const call = (l: RateLimiter): Promise<Decision> =>
      s.op === 'peek' ? l.peek(key, { cost: s.cost }) : l.consume(key, { cost: s.cost });
    const [fromMemory, fromLua] = await Promise.all([call(memory), call(lua)]);
    if (JSON.stringify(fromMemory) !== JSON.stringify(fromLua)) {
      // Report the step so a shrunk counterexample reads as a story.
      expect({ step: i, op: s.op, cost: s.cost, lua: fromLua }).toEqual({
        step: i,
        op: s.op,
        cost: s.cost,
        lua: fromMemory,
      });
    }
  }
}

describe('Lua scripts and TypeScript twins agree on random traces', () => {
  test.each(ALGORITHM_CASES.map((c) => [c.kind, c] as const))('%s alone', async (_kind, cases) => {
    await fc.assert(
      fc.asyncProperty(
        policySet([cases.arbitrary], 1),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        runTrace,
      ),
      { numRuns: 60 },
    );
  });

  test('mixed policy sets (one script, all-or-nothing)', async () => {
    await fc.assert(
      fc.asyncProperty(
        policySet(
          ALGORITHM_CASES.map((c) => c.arbitrary),
          4,
        ),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        runTrace,
      ),
      { numRuns: 120 },
    );
  });
});
