/**
 * Random traces — time steps, keys, costs, peeks and resets over random policy sets — fed to
 * the Lua scripts on real Redis and to the TypeScript twins in memory: every decision must be
 * identical, field for field. Twice: one call at a time with batching off, and every call of
 * the trace issued at once so that redisStore batches them (small random batch bounds), which
 * must decide them in order exactly as single calls would.
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

/** One step's call; a reset answers undefined. */
function call(l: RateLimiter, s: TraceStep): Promise<Decision | undefined> {
  const key = `k${s.key}`;
  if (s.op === 'reset') return l.reset(key).then(() => undefined);
  return s.op === 'peek' ? l.peek(key, { cost: s.cost }) : l.consume(key, { cost: s.cost });
}

/**
 * `maxDecisions` undefined: one call at a time, batching off. Otherwise every step is issued
 * before the first answer arrives (the clock still moving between them), in batches of at most
 * that many decisions, and compared with the twins deciding the same steps one by one.
 */
async function runTrace(
  maxDecisions: number | undefined,
  policies: Policy[],
  trace: TraceStep[],
): Promise<void> {
  const time = fakeClock(T0 + (run % 7) * 123.456);
  const start = time.now;
  const prefix = `diff${run++}`;
  const memory = new RateLimiter({ store: memoryStore({ clock: time.clock }), policies, prefix });
  const batch = maxDecisions === undefined ? false : { maxDecisions };
  const lua = new RateLimiter({
    store: redisStore({ client: redis, clock: time.clock, batch }),
    policies,
    prefix,
  });
  const fromMemory: Array<Decision | undefined> = [];
  let fromLua: Array<Decision | undefined> = [];
  for (const s of trace) {
    time.now += s.advance / 1000;
    fromMemory.push(await call(memory, s));
    if (batch === false) fromLua.push(await call(lua, s));
  }
  if (batch !== false) {
    time.now = start;
    const pending: Array<Promise<Decision | undefined>> = [];
    for (const s of trace) {
      time.now += s.advance / 1000;
      // RateLimiter.reset reaches the store after an await, so calls made in its tick could
      // overtake it: it waits for the calls before it, and they for it.
      if (s.op === 'reset') {
        await Promise.all(pending);
        await call(lua, s);
        pending.push(Promise.resolve(undefined));
      } else {
        pending.push(call(lua, s));
      }
    }
    fromLua = await Promise.all(pending);
  }
  for (const [i, s] of trace.entries()) {
    if (JSON.stringify(fromMemory[i]) !== JSON.stringify(fromLua[i])) {
      // Report the step so a shrunk counterexample reads as a story.
      expect({ step: i, op: s.op, cost: s.cost, lua: fromLua[i] }).toEqual({
        step: i,
        op: s.op,
        cost: s.cost,
        lua: fromMemory[i],
      });
    }
  }
}

const MODES = [
  ['one call at a time', fc.constant(undefined)],
  ['batched', fc.integer({ min: 2, max: 12 })],
] as const;

describe.each(MODES)('Lua scripts and TypeScript twins agree on random traces (%s)', (_, mode) => {
  test.each(ALGORITHM_CASES.map((c) => [c.kind, c] as const))('%s alone', async (_kind, cases) => {
    await fc.assert(
      fc.asyncProperty(
        mode as fc.Arbitrary<number | undefined>,
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
        mode as fc.Arbitrary<number | undefined>,
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
