/**
 * Live limits on a batching Redis store: the live script's batch variant decides the calls whose
 * keys have no live state as any batch does, and the others through the live part
 * (lua/include/batch.lua, lua/include/live.lua). Every call of a random trace issued at once, over
 * keys with and without overrides of their own and with an override for every key, must answer
 * as the twins answer the same calls one by one; a flood of calls is batched and admits exactly
 * each key's limit, its own or its override's.
 */
import fc from 'fast-check';
import { useOwnRedisServer } from '../../../../../test/harness/redis';
import {
  type Carry,
  type Decision,
  fixedWindow,
  gcra,
  memoryStore,
  type Policy,
  RateLimiter,
  redisStore,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from '../../../src/index';
import { fakeClock, T0 } from '../../../src/testing/index';

// Its own server: calls issued at once must be decided in the order sent, and the suite's shared
// server has its script cache flushed by other jest workers (see conformance.test.ts).
const own = useOwnRedisServer();
const redis = () => own().client;

/** EVALSHA and EVAL calls Redis has run so far. */
async function scriptCalls(): Promise<number> {
  const info = await redis().info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
  return n;
}

interface Step {
  advance: number;
  key: number;
  cost: number;
  op: 'consume' | 'peek' | 'setLimit' | 'clearLimit';
  policy: number;
  limit: number;
  carry: Carry;
  ttl: number | undefined;
}

const step: fc.Arbitrary<Step> = fc.record({
  advance: fc.integer({ min: 0, max: 150_000 }),
  // Changes on keys 0 to 3 and '*' (8), decisions on keys 0 to 7: batches mix keys with live
  // state and keys without.
  key: fc.integer({ min: 0, max: 8 }),
  cost: fc.integer({ min: 0, max: 3 }),
  op: fc.constantFrom(
    'consume' as const,
    'consume' as const,
    'consume' as const,
    'consume' as const,
    'peek' as const,
    'setLimit' as const,
    'clearLimit' as const,
  ),
  policy: fc.integer({ min: 0, max: 1 }),
  limit: fc.integer({ min: 1, max: 9 }),
  ttl: fc.option(fc.integer({ min: 50, max: 2000 }), { nil: undefined }),
  carry: fc.constantFrom<Carry>('as-is', 'proportional', 'additive', 'reset'),
});

const FACTORIES: ReadonlyArray<(limit: number, name: string) => Policy> = [
  (limit, name) => fixedWindow({ limit, window: 400, name }),
  (limit, name) => gcra({ limit, window: 300, name }),
  (limit, name) => tokenBucket({ limit, window: 500, name }),
  (limit, name) => slidingWindow({ limit, window: 600, buckets: 3, name }),
  (limit, name) => slidingLog({ limit, window: 350, name }),
];

let run = 0;

type Answer = Decision | { refused: string } | undefined;

async function call(limiter: RateLimiter, s: Step, names: string[]): Promise<Answer> {
  const change = s.op === 'setLimit' || s.op === 'clearLimit';
  const key = !change ? `k${s.key % 8}` : s.key === 8 ? '*' : `k${s.key % 4}`;
  if (s.op === 'setLimit') {
    const policy = names[s.policy % names.length]!;
    const ttl = s.ttl === undefined ? {} : { ttl: s.ttl };
    await limiter.setLimit(key, { policy, limit: s.limit }, { carry: s.carry, ...ttl });
    return undefined;
  }
  if (s.op === 'clearLimit') {
    await limiter.clearLimit(key, { carry: s.carry });
    return undefined;
  }
  return s.op === 'peek'
    ? limiter.peek(key, { cost: s.cost })
    : limiter.consume(key, { cost: s.cost });
}

/** The trace issued at once on a batching store against the twins one call at a time. */
async function runTrace(
  kinds: number[],
  limits: number[],
  maxDecisions: number,
  trace: Step[],
): Promise<void> {
  const names = kinds.map((_, i) => `p${i}`);
  const policies = () => kinds.map((k, i) => FACTORIES[k]!(limits[i]!, names[i]!));
  const time = fakeClock(T0 + (run % 7) * 123.456);
  const start = time.now;
  const prefix = `lb${run++}`;
  const twins = new RateLimiter({
    store: memoryStore({ clock: time.clock }),
    policies: policies(),
    prefix,
    liveLimits: true,
  });
  const lua = new RateLimiter({
    store: redisStore({ client: redis(), clock: time.clock, batch: { maxDecisions } }),
    policies: policies(),
    prefix,
    liveLimits: true,
  });
  const expected: Answer[] = [];
  for (const s of trace) {
    time.now += s.advance / 1000;
    expected.push(await call(twins, s, names));
  }
  time.now = start;
  // A live limiter reads its override for every key before its first decision, which then reads
  // the clock later than it was issued: that read is done first.
  await lua.peek('warm-up', { cost: 0 });
  const pending: Array<Promise<Answer>> = [];
  for (const s of trace) {
    time.now += s.advance / 1000;
    if (s.op === 'setLimit' || s.op === 'clearLimit') {
      // A change reaches the store after an await: it waits for the calls before it.
      await Promise.all(pending);
      pending.push(Promise.resolve(await call(lua, s, names)));
    } else {
      pending.push(call(lua, s, names));
    }
  }
  const actual = await Promise.all(pending);
  for (const [i, s] of trace.entries()) {
    if (JSON.stringify(expected[i]) !== JSON.stringify(actual[i])) {
      expect({ step: i, ...s, lua: actual[i] }).toEqual({ step: i, ...s, lua: expected[i] });
    }
  }
}

test('calls issued at once over keys with and without overrides answer as the twins do', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: FACTORIES.length - 1 }), { minLength: 1, maxLength: 2 }),
      fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 2, maxLength: 2 }),
      fc.integer({ min: 2, max: 12 }),
      fc.array(step, { minLength: 1, maxLength: 60 }),
      runTrace,
    ),
    { numRuns: 80 },
  );
}, 120_000);

/**
 * `callers` callers in flight, each consuming `each` times, caller c's i-th call on key
 * `(c · each + i) % keys` (named `name(k)`): how many calls each key admitted, and how many ran.
 */
async function flood(
  limiter: RateLimiter,
  callers: number,
  each: number,
  keys: number,
  name: (k: number) => string,
): Promise<{ admitted: number[]; decisions: number }> {
  const admitted = new Array<number>(keys).fill(0);
  let decisions = 0;
  await Promise.all(
    Array.from({ length: callers }, async (_, c) => {
      for (let i = 0; i < each; i++) {
        const k = (c * each + i) % keys;
        const d = await limiter.consume(name(k));
        decisions++;
        if (d.allowed) admitted[k]!++;
      }
    }),
  );
  return { admitted, decisions };
}

test('a flood over 200 keys, every tenth overridden, is batched and admits exactly each limit', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: redis() }),
    policies: [
      fixedWindow({ limit: 5, window: '1h', name: 'hour' }),
      gcra({ limit: 6, window: '1h', name: 'g' }),
    ],
    prefix: `flood${run++}`,
    liveLimits: true,
  });
  for (let k = 0; k < 200; k += 10) await limiter.setLimit(`u${k}`, { policy: 'hour', limit: 3 });
  const before = await scriptCalls();
  // 64 callers of 25 calls over 200 keys: 8 calls per key, more than any limit.
  const { admitted, decisions } = await flood(limiter, 64, 25, 200, (k) => `u${k}`);
  const scripts = (await scriptCalls()) - before;
  expect(decisions).toBe(1600);
  for (let k = 0; k < 200; k++)
    expect([`u${k}`, admitted[k]]).toEqual([`u${k}`, k % 10 === 0 ? 3 : 5]);
  // Overridden or not, the calls share batch scripts.
  expect(scripts).toBeLessThan(1600 / 4);
});

// On Redis TIME a limiter's cost-1 calls share one ARGV array (a batch's shape): a live call
// that changes it for its override must leave it as it was for the calls after it.
test('calls of one shape, keys with overrides of either policy and keys without, with an override for every key too', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: redis() }),
    policies: [
      fixedWindow({ limit: 6, window: '1h', name: 'hour' }),
      slidingWindow({ limit: 7, window: '1h', name: 'sw' }),
    ],
    prefix: `shape${run++}`,
    liveLimits: true,
  });
  const expected = (k: number, global: number) => {
    const hour = k % 5 === 0 ? 2 : 6;
    const sw = k % 3 === 0 ? 4 : global;
    return Math.min(hour, sw);
  };
  const overrideSome = async () => {
    for (let k = 0; k < 60; k++) {
      if (k % 5 === 0) await limiter.setLimit(`s${k}`, { policy: 'hour', limit: 2 });
      if (k % 3 === 0) await limiter.setLimit(`s${k}`, { policy: 'sw', limit: 4 });
    }
  };
  await overrideSome();
  for (const global of [7, 5]) {
    if (global === 5) {
      await limiter.resetAll();
      await overrideSome();
      await limiter.setLimit('*', { policy: 'sw', limit: 5 });
    }
    const { admitted } = await flood(limiter, 30, 16, 60, (k) => `s${k}`);
    for (let k = 0; k < 60; k++) expect([k, admitted[k]]).toEqual([k, expected(k, global)]);
  }
});

test('an override for every key applies to calls decided together, and goes with clearLimit', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: redis() }),
    policies: [fixedWindow({ limit: 4, window: '1h', name: 'hour' })],
    prefix: `global${run++}`,
    liveLimits: true,
  });
  await limiter.setLimit('*', { policy: 'hour', limit: 2 });
  const answers = await Promise.all(Array.from({ length: 6 }, () => limiter.consume('a')));
  expect(answers.map((d) => d.allowed)).toEqual([true, true, false, false, false, false]);
  await limiter.clearLimit('*', { carry: 'additive' });
  const after = await Promise.all(Array.from({ length: 4 }, () => limiter.consume('a')));
  // 2 used of 2 → 2 used of 4: two more.
  expect(after.map((d) => d.allowed)).toEqual([true, true, false, false]);
});
