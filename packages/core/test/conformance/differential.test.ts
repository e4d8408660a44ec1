/**
 * Random traces — time steps, keys, costs, peeks and resets over random policy sets — fed to
 * the Lua scripts on real Redis and to the TypeScript twins in memory: every decision must be
 * identical, field for field. Twice: one call at a time with batching off, and every call of
 * the trace issued at once so that redisStore batches them (small random batch bounds), which
 * must decide them in order exactly as single calls would. Traces reserve, settle (0 to 4×
 * the largest estimate), cancel, penalize and set too, so debt meets every other step.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { flushRedis } from '../../../../test/harness/redis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server';
import { toDecision } from '../../src/decision';
import {
  type BlockDuration,
  type Decision,
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  type Policy,
  RateLimiter,
  type Reservation,
  redisStore,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../src/index';
import { LEASE_KINDS } from '../../src/stores/lease-take';
import type { PreparedPolicies } from '../../src/stores/store';
import { ALGORITHM_CASES } from './algorithms/index';
import { fakeClock, T0 } from './table';

// Its own server: batched traces are issued at once and must be decided in the order sent, and
// the suite's shared server has its script cache flushed (and reloaded) by other jest workers
// (see conformance.test.ts).
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

interface TraceStep {
  /** Microseconds to advance the clock before this call. */
  advance: number;
  key: number;
  cost: number;
  op:
    | 'consume'
    | 'peek'
    | 'reset'
    | 'refund'
    | 'block'
    | 'unblock'
    | 'reserve'
    | 'settle'
    | 'cancel'
    | 'penalize'
    | 'set'
    /** A lease take (Lua mode '9') of up to `cost` units, straight to the store. */
    | 'take';
  /** For `settle`: the actual cost (0 to 4 times the largest estimate); for `set`: `used`. */
  actual: number;
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
    { weight: 3, arbitrary: fc.constant('reserve' as const) },
    { weight: 3, arbitrary: fc.constant('settle' as const) },
    { weight: 1, arbitrary: fc.constant('cancel' as const) },
    { weight: 2, arbitrary: fc.constant('penalize' as const) },
    { weight: 1, arbitrary: fc.constant('set' as const) },
  ),
  actual: fc.integer({ min: 0, max: 36 }),
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

/** What a call answered: a decision, undefined (reset, block, unblock), or an error's code. */
type Answer = Decision | { error: string } | undefined;

/**
 * One step's call; a reset answers undefined. `reservations` holds the limiter's latest
 * reservation per key, which settle and cancel act on (nothing to act on: undefined).
 */
function call(
  l: RateLimiter,
  s: TraceStep,
  reservations: Map<string, Reservation>,
): Promise<Answer> {
  const key = `k${s.key}`;
  if (s.op === 'reserve' || s.op === 'penalize' || s.op === 'set') {
    // A limiter with a policy that cannot carry debt refuses, on both stores alike.
    const answer =
      s.op === 'penalize'
        ? l.penalize(key, { cost: s.cost })
        : s.op === 'set'
          ? l.set(key, { used: s.actual })
          : l.reserve(key, { cost: s.cost }).then((r) => {
              reservations.set(key, r);
              return r;
            });
    return answer.catch((error: { code?: string }) => ({ error: String(error.code) }));
  }
  if (s.op === 'settle' || s.op === 'cancel') {
    const r = reservations.get(key);
    if (r === undefined) return Promise.resolve(undefined);
    return s.op === 'settle' ? r.settle(s.actual) : r.cancel();
  }
  if (s.op === 'take') return take(l, key, s.cost);
  if (s.op === 'reset') return l.reset(key).then(() => undefined);
  if (s.op === 'block') return l.block(key, s.duration).then(() => undefined);
  if (s.op === 'unblock') return l.unblock(key).then(() => undefined);
  if (s.op === 'refund') return l.refund(key, { cost: s.cost });
  return s.op === 'peek' ? l.peek(key, { cost: s.cost }) : l.consume(key, { cost: s.cost });
}

/** Each limiter's policies prepared once more, for its store's lease take. */
const preparedFor = new WeakMap<RateLimiter, PreparedPolicies>();

/** A lease take of up to `want` units (1 at least), answered as its decision and its grant. */
async function take(l: RateLimiter, key: string, want: number): Promise<Answer> {
  let prepared = preparedFor.get(l);
  if (prepared === undefined) {
    prepared = l.store.prepare(l.policies);
    preparedFor.set(l, prepared);
  }
  const taken = await prepared.take!(l.storageKeys(key), Math.max(1, want));
  return { ...toDecision(taken, l.policies), granted: taken.granted } as Decision;
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
  const fromMemory: Answer[] = [];
  let fromLua: Answer[] = [];
  const memoryReservations = new Map<string, Reservation>();
  const luaReservations = new Map<string, Reservation>();
  for (const s of trace) {
    time.now += s.advance / 1000;
    fromMemory.push(await call(memory, s, memoryReservations));
    if (batch === false) fromLua.push(await call(lua, s, luaReservations));
  }
  if (batch !== false) {
    time.now = start;
    const pending: Array<Promise<Answer>> = [];
    for (const s of trace) {
      time.now += s.advance / 1000;
      // RateLimiter.reset (and refund, block, unblock) reach the store after an await, so calls
      // made in its tick could overtake it: it waits for the calls before it, and they for it.
      if (s.op !== 'consume' && s.op !== 'peek' && s.op !== 'take') {
        await Promise.all(pending);
        pending.push(Promise.resolve(await call(lua, s, luaReservations)));
      } else {
        pending.push(call(lua, s, luaReservations));
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
        policySet([withLockout(cases.arbitrary)], 1),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        runTrace,
      ),
      { numRuns: 60 },
    );
  });

  test('fixed-window extendWindow (its denials write)', async () => {
    // Small limits and windows of the order of the trace's steps, so that denials that move a
    // window's end, and calls between the old end and the new, come up in most traces.
    const extending = fc
      .record({
        limit: fc.integer({ min: 1, max: 3 }),
        window: fc.integer({ min: 50, max: 600 }),
        extendWindow: fc.constantFrom('on-denial' as const, 'on-hit' as const),
      })
      .map((o) => fixedWindow(o));
    await fc.assert(
      fc.asyncProperty(
        mode as fc.Arbitrary<number | undefined>,
        policySet([withLockout(extending), ...ALGORITHM_CASES.map((c) => c.arbitrary)], 2),
        fc.array(step, { minLength: 20, maxLength: 60, size: 'max' }),
        runTrace,
      ),
      { numRuns: 60 },
    );
  });

  test("fixed-window anchor 'first-request' in debt over several windows", async () => {
    // Limits of 1–3 against settles and penalties of up to 36: debts of many windows, carried
    // back to back, reached again after clock steps of one or several windows, refunded.
    const chained = fc
      .record({
        limit: fc.integer({ min: 1, max: 3 }),
        window: fc.integer({ min: 50, max: 600 }),
        extendWindow: fc.constantFrom(undefined, 'on-denial' as const, 'on-hit' as const),
      })
      .map(({ extendWindow, ...o }) =>
        fixedWindow(extendWindow ? { ...o, extendWindow } : { ...o, anchor: 'first-request' }),
      );
    await fc.assert(
      fc.asyncProperty(
        mode as fc.Arbitrary<number | undefined>,
        policySet([chained], 1),
        fc.array(step, { minLength: 20, maxLength: 60, size: 'max' }),
        runTrace,
      ),
      { numRuns: 60 },
    );
  });

  test('fixed-window kept at one key per window, in debt over several windows', async () => {
    // A limit of at least the window in µs keeps one key per window (layout 0); windows of a
    // few µs let costs of up to 36 owe several of them, and steps of up to 8 µs land in the
    // windows owed, in the last one and after it. With a second policy, check reads instead of
    // counting first.
    const perWindowKey = fc
      .record({ windowUs: fc.integer({ min: 2, max: 12 }), extra: fc.integer({ min: 0, max: 6 }) })
      .map(({ windowUs, extra }) =>
        fixedWindow({ limit: windowUs + extra, window: windowUs / 1000 }),
      );
    const shortSteps = step.map((s) => ({ ...s, advance: s.advance % 9 }));
    await fc.assert(
      fc.asyncProperty(
        mode as fc.Arbitrary<number | undefined>,
        fc
          .tuple(
            withLockout(perWindowKey),
            fc.oneof(fc.constant(undefined), ...ALGORITHM_CASES.map((c) => c.arbitrary)),
          )
          .map(([own, other]) =>
            other === undefined || other.id === own.id ? [own] : [own, other],
          ),
        fc.array(shortSteps, { minLength: 20, maxLength: 60, size: 'max' }),
        runTrace,
      ),
      { numRuns: 100 },
    );
  });

  test('lease takes (mode 9) among every other call, on the kinds that lease', async () => {
    const leasing = ALGORITHM_CASES.filter((c) => LEASE_KINDS.has(c.kind)).map((c) =>
      withLockout(c.arbitrary.filter((p) => p.options.extendWindow === undefined)),
    );
    const withTakes = fc.oneof(
      { weight: 3, arbitrary: step },
      {
        weight: 2,
        arbitrary: fc.record({
          advance: fc.integer({ min: 0, max: 400_000 }),
          key: fc.integer({ min: 0, max: 2 }),
          cost: fc.integer({ min: 1, max: 12 }),
          op: fc.constant('take' as const),
          actual: fc.constant(0),
          duration: fc.constant(0),
        }),
      },
    );
    await fc.assert(
      fc.asyncProperty(
        mode as fc.Arbitrary<number | undefined>,
        policySet(leasing, 4),
        fc.array(withTakes, { minLength: 1, maxLength: 60 }),
        runTrace,
      ),
      { numRuns: 100 },
    );
  });

  test('mixed policy sets (one script, all-or-nothing)', async () => {
    await fc.assert(
      fc.asyncProperty(
        mode as fc.Arbitrary<number | undefined>,
        policySet(
          ALGORITHM_CASES.map((c) => withLockout(c.arbitrary)),
          // 2–4 policies take the engine's written-out paths, 5 its loop (lua/include/several.lua).
          5,
        ),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        runTrace,
      ),
      { numRuns: 120 },
    );
  });
});
