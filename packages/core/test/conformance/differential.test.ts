/**
 * Random traces — time steps, keys, costs, peeks and resets over random policy sets — fed to
 * the Lua scripts on real Redis and to the TypeScript twins in memory: every decision must be
 * identical, field for field.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis';
import {
  type BlockDuration,
  type Decision,
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  type Policy,
  RateLimiter,
  redisStore,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../src/index';
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
  op: 'consume' | 'peek' | 'reset' | 'refund' | 'block' | 'unblock';
  /** For `block`: ms, or for ever. */
  duration: number | 'forever';
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
    { weight: 3, arbitrary: fc.constant('refund' as const) },
    { weight: 1, arbitrary: fc.constant('block' as const) },
    { weight: 1, arbitrary: fc.constant('unblock' as const) },
  ),
  duration: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.constant('forever' as const)),
});

const FACTORIES: Record<string, (options: never) => Policy> = {
  'fixed-window': fixedWindow,
  'sliding-log': slidingLog,
  'sliding-window': slidingWindow,
  'token-bucket': tokenBucket,
  gcra,
  'leaky-bucket': leakyBucket,
  'smooth-bursty': smoothBursty,
  'smooth-warming-up': smoothWarmingUp,
};

/** Random lockouts: none, a plain duration, or progressive (µs lengths reach rounding edges). */
const blockDuration: fc.Arbitrary<BlockDuration | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 2000 }) },
  {
    weight: 2,
    arbitrary: fc.record({
      initial: fc.oneof(fc.integer({ min: 1, max: 500 }), fc.constant('333us' as const)),
      multiplier: fc.constantFrom(1, 1.5, 2, 3.25),
      max: fc.integer({ min: 500, max: 4000 }),
      forgetAfter: fc.integer({ min: 0, max: 3000 }),
    }),
  },
);

/** `policy` rebuilt from its normalised options, with a random lockout. */
function withLockout(policy: fc.Arbitrary<Policy>): fc.Arbitrary<Policy> {
  return fc.tuple(policy, blockDuration).map(([p, b]) => {
    if (b === undefined) return p;
    const factory = FACTORIES[p.kind]!;
    return factory({ ...p.options, blockDuration: b } as never);
  });
}

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
    if (s.op === 'block') {
      await Promise.all([memory.block(key, s.duration), lua.block(key, s.duration)]);
      continue;
    }
    if (s.op === 'unblock') {
      await Promise.all([memory.unblock(key), lua.unblock(key)]);
      continue;
    }
    const call = (l: RateLimiter): Promise<Decision> =>
      s.op === 'peek'
        ? l.peek(key, { cost: s.cost })
        : s.op === 'refund'
          ? l.refund(key, { cost: s.cost })
          : l.consume(key, { cost: s.cost });
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
        policySet([withLockout(cases.arbitrary)], 1),
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
          ALGORITHM_CASES.map((c) => withLockout(c.arbitrary)),
          4,
        ),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        runTrace,
      ),
      { numRuns: 120 },
    );
  });
});
