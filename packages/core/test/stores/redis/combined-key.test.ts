/**
 * One key per caller (DESIGN §5, lua/include/combined.lua): a limiter of several policies whose
 * states are strings keeps them in one Redis key beside its block key. What is stored, its TTL
 * (the longest need, to the ms) after a consume, a refund and a lockout, entries that aged out
 * inside a key another policy keeps alive, the limiters that keep a key per policy, the scripts'
 * SHA1s and the cluster slot.
 */
import calculateSlot from 'cluster-key-slot';
import { keysWithTtl, useTestRedis } from '../../../../../test/harness/redis';
import {
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
import { INJECTED_CLOCK_TTL_SLACK_MS as PAD } from '../../../src/stores/redis';
import {
  algorithmKinds,
  batchScriptFor,
  combinedScriptFor,
  scriptFor,
} from '../../../src/stores/scripts';
import { T0 } from './redis-state';

const testRedis = useTestRedis();

/** A limiter on the suite's Redis whose time is `time.now` (ms), with its memory twin. */
function limiters(policies: Policy[], time: { now: number }, batch = false) {
  const clock = () => time.now;
  return {
    redis: new RateLimiter({
      store: redisStore({ client: testRedis(), clock, batch }),
      policies,
      prefix: 'ck',
    }),
    memory: new RateLimiter({ store: memoryStore({ clock }), policies, prefix: 'ck' }),
  };
}

/** Every key in the database: name → [value, PTTL]. */
async function stored(): Promise<Record<string, [string | null, number]>> {
  const out: Record<string, [string | null, number]> = {};
  for (const { key, pttl } of await keysWithTtl(testRedis())) {
    out[key] = [await testRedis().get(key), pttl];
  }
  return out;
}

/**
 * The state key's entries (lua/include/combined.lua: struct '<dds' per policy): [expiry ms, the
 * number or the string], or null for a policy with no state.
 */
async function entries(key: string): Promise<Array<[number, number | string] | null>> {
  const value = (await testRedis().getBuffer(key)) ?? Buffer.alloc(0);
  const out: Array<[number, number | string] | null> = [];
  for (let pos = 0; pos < value.length; ) {
    const expiry = value.readDoubleLE(pos);
    const number = value.readDoubleLE(pos + 8);
    const end = value.indexOf(0, pos + 16);
    const text = value.toString('utf8', pos + 16, end);
    out.push(expiry === 0 ? null : [expiry, text === '' ? number : text]);
    pos = end + 1;
  }
  return out;
}

/** Asserts a PTTL read right after a write of `px` ms (a few ms may have passed). */
function expectPttl(pttl: number, px: number): void {
  expect(pttl).toBeLessThanOrEqual(px);
  expect(pttl).toBeGreaterThan(px - 200);
}

test('three policies: one state key and the block key; one entry per policy, TTL = the longest need', async () => {
  const time = { now: T0 + 100 };
  const policies = [
    fixedWindow({ limit: 3, window: '1m' }),
    fixedWindow({ limit: 5, window: '1h' }),
    gcra({ limit: 10, window: '1s' }),
  ];
  const { redis } = limiters(policies, time);
  const keys = redis.storageKeys('u');
  expect(keys).toHaveLength(2);
  expect(keys[0]).toMatch(/^ck:\{u\}:st/);
  expect(keys[1]).toMatch(/^ck:\{u\}:bk/);
  for (const p of policies) expect(keys).not.toContain(`ck:{u}:${p.id}`);
  expect((await redis.consume('u', { cost: 2 })).allowed).toBe(true);
  const all = await stored();
  expect(Object.keys(all)).toEqual([keys[0]]);
  // Each entry: its expiry (the clock in ms plus the TTL its own key would get) and the integer
  // that key would hold: fixedWindow index · (limit + 1) + used, gcra its TAT (µs).
  const nowMs = T0 + 100;
  const minute = Math.floor(nowMs / 60_000);
  const hour = Math.floor(nowMs / 3_600_000);
  const minuteTtl = (minute + 1) * 60_000 - nowMs + PAD;
  const hourTtl = (hour + 1) * 3_600_000 - nowMs + PAD;
  expect(await entries(keys[0]!)).toEqual([
    [nowMs + minuteTtl, minute * 4 + 2],
    [nowMs + hourTtl, hour * 6 + 2],
    [nowMs + 200 + PAD, (nowMs + 200) * 1000],
  ]);
  expectPttl(all[keys[0]!]![1], hourTtl);
});

test('states that are not one integer are kept as the strings their keys would hold', async () => {
  const time = { now: T0 + 100 };
  const { redis } = limiters(
    [tokenBucket({ limit: 4, window: '4s' }), slidingWindow({ limit: 10, window: '10s' })],
    time,
  );
  await redis.consume('u', { cost: 2 });
  // tokenBucket: '<units>:<since µs>' (one token = 1 s = 1e6 units here), refilled in 2 s;
  // slidingWindow: '<sub-window>:<counts>', until the newest count leaves the window.
  const now = (T0 + 100) * 1000;
  expect(await entries(redis.storageKeys('u')[0]!)).toEqual([
    [T0 + 100 + 2000 + PAD, `${2 * 1_000_000}:${now}`],
    [T0 + 10_000 + PAD, `${Math.floor(now / 1_000_000)}:2`],
  ]);
});

test('after a refund the TTL follows the states left; with none left the key is gone', async () => {
  const time = { now: T0 + 100 };
  // gcra 1 per second (10 per 10 s) outlives fixedWindow's 900 ms left in its window.
  const { redis } = limiters(
    [fixedWindow({ limit: 5, window: '1s' }), gcra({ limit: 10, window: '10s' })],
    time,
  );
  const [key] = redis.storageKeys('u');
  await redis.consume('u', { cost: 3 });
  expectPttl(await testRedis().pttl(key!), 3000 + PAD);
  // gcra gives all three back (its entry goes); fixedWindow's count drops to 0 and keeps its
  // window's TTL, as DECRBY keeps a key's.
  const refunded = await redis.refund('u', { cost: 3 });
  expect(refunded.policies.map((p) => p.remaining)).toEqual([5, 10]);
  expect(await entries(key!)).toEqual([[T0 + 1000 + PAD, Math.floor(T0 / 1000) * 6], null]);
  expectPttl(await testRedis().pttl(key!), 900 + PAD);
  // A reset leaves nothing.
  await redis.reset('u');
  expect(await stored()).toEqual({});
});

test('a lockout clears the locked-out policy: the TTL is the other states', async () => {
  const time = { now: T0 + 100 };
  const { redis } = limiters(
    [
      fixedWindow({ limit: 10, window: '1s' }),
      gcra({ limit: 1, window: '1h', blockDuration: '1m' }),
    ],
    time,
  );
  const [key, blockKey] = redis.storageKeys('u');
  expect((await redis.consume('u')).allowed).toBe(true);
  expectPttl(await testRedis().pttl(key!), 3_600_000 + PAD);
  const denied = await redis.consume('u');
  expect(denied).toMatchObject({ allowed: false, reason: 'blocked', retryAfter: 60_000 });
  // gcra's entry is gone; fixedWindow's count of 1 stays, with its own 900 ms.
  expect(await entries(key!)).toEqual([[T0 + 1000 + PAD, Math.floor(T0 / 1000) * 11 + 1], null]);
  expectPttl(await testRedis().pttl(key!), 900 + PAD);
  expect(await testRedis().pttl(blockKey!)).toBeGreaterThan(60_000);
});

test.each([false, true])(
  'an entry that aged out inside a key another policy keeps alive decides as a fresh key (batch %s)',
  async (batch) => {
    const time = { now: T0 + 100 };
    const policies = [gcra({ limit: 2, window: '1s' }), fixedWindow({ limit: 100, window: '1h' })];
    const { redis, memory } = limiters(policies, time, batch);
    const [key] = redis.storageKeys('u');
    const both = async (f: (l: RateLimiter) => Promise<unknown>) => {
      const [a, b] = [await f(redis), await f(memory)];
      expect(a).toEqual(b);
      return a;
    };
    await both((l) => l.consume('u', { cost: 2 }));
    expect(await entries(key!)).toHaveLength(2);
    // gcra's entry expires 1 s + the pad later; fixedWindow's hour keeps the key.
    time.now += 1000 + PAD + 1;
    expect(await testRedis().pttl(key!)).toBeGreaterThan(0);
    expect(await both((l) => l.peek('u', { cost: 2 }))).toMatchObject({ allowed: true });
    // A write that changes only fixedWindow drops the aged-out entry.
    await both((l) => l.refund('u', { cost: 1 }));
    expect(await entries(key!)).toEqual([null, [expect.any(Number), expect.any(Number)]]);
    await both((l) => l.consume('u', { cost: 2 }));
    expect(await both((l) => l.consume('u'))).toMatchObject({ allowed: false });
  },
);

test('a clock in its first millisecond: a policy with no state reads as missing', async () => {
  // Entries with no state have expiry 0, which the clock's first ms must not read as current.
  const time = { now: 0.5 };
  const { redis, memory } = limiters(
    [slidingWindow({ limit: 3, window: '1s' }), gcra({ limit: 5, window: '1s' })],
    time,
  );
  for (let i = 0; i < 4; i++) {
    const d = await redis.consume('u');
    expect(d.reason).toBeUndefined();
    expect(d).toEqual(await memory.consume('u'));
  }
});

test('slidingLog, fixedWindow with limits too large for one integer, and one policy keep a key per policy', async () => {
  const time = { now: T0 + 100 };
  const cases: Policy[][] = [
    [fixedWindow({ limit: 3, window: '1m' }), slidingLog({ limit: 3, window: '1m' })],
    [fixedWindow({ limit: 1e12, window: '1h' }), gcra({ limit: 3, window: '1m' })],
    [tokenBucket({ limit: 3, window: '1m' })],
  ];
  for (const policies of cases) {
    await testRedis().flushdb();
    const { redis } = limiters(policies, time);
    const keys = redis.storageKeys('u');
    expect(keys.slice(0, -1)).toEqual(policies.map((p) => `ck:{u}:${p.id}`));
    await redis.consume('u');
    // fixedWindow's layout 0 counts at <base>:<window index>.
    const names = (await keysWithTtl(testRedis())).map(({ key }) => key.replace(/:\d+$/, ''));
    expect(names.sort()).toEqual(keys.slice(0, -1).sort());
  }
});

test("stateKeys: 'per-policy' keeps a key per policy, so limiters that hold one policy share its budget", async () => {
  const time = { now: T0 + 100 };
  const api = fixedWindow({ limit: 3, window: '1m', name: 'api' });
  const make = (route: Policy) =>
    new RateLimiter({
      store: redisStore({ client: testRedis(), clock: () => time.now, batch: false }),
      policies: [api, route],
      prefix: 'ck',
      stateKeys: 'per-policy',
    });
  const orders = make(gcra({ limit: 9, window: '1m', name: 'orders' }));
  const search = make(tokenBucket({ limit: 9, window: '1m', name: 'search' }));
  expect(orders.storageKeys('u').slice(0, -1)).toEqual(
    orders.policies.map((p) => `ck:{u}:${p.id}`),
  );
  // The shared policy is one budget of 3 across both limiters.
  const allowed = [];
  for (const limiter of [orders, search, orders, search]) {
    allowed.push((await limiter.consume('u')).allowed);
  }
  expect(allowed).toEqual([true, true, true, false]);
  // The default ('per-caller') would give each limiter a state key of its own.
  const perCaller = new RateLimiter({
    store: redisStore({ client: testRedis(), batch: false }),
    policies: [api, gcra({ limit: 9, window: '1m' })],
    prefix: 'ck',
  });
  expect(perCaller.storageKeys('u')).toHaveLength(2);
  expect(
    () => new RateLimiter({ store: memoryStore(), policies: [api], stateKeys: 'one' as never }),
  ).toThrow(/RateLimiter\.stateKeys.*'per-caller' or 'per-policy'/);
});

test('every combined script loads under its SHA1; mixed ones come from the same assembler', async () => {
  const kinds = algorithmKinds().filter((k) => k !== 'sliding-log');
  for (const kind of kinds) {
    const script = combinedScriptFor([kind, kind]);
    expect(script.name).toBe(`${kind}-combined`);
    expect(script.combined).toBe(true);
    expect(batchScriptFor(script).name).toBe(`${kind}-combined-batch`);
    for (const s of [script, batchScriptFor(script)]) {
      expect(await testRedis().script('LOAD', s.source)).toBe(s.sha1);
    }
  }
  expect(() => combinedScriptFor(['sliding-log', 'gcra'])).toThrow(
    /no combined layout for sliding-log/,
  );
  // One-policy scripts are not combined, and hold no CALL.
  for (const kind of algorithmKinds()) expect(scriptFor([kind]).source).not.toContain('CALL(');
  const mixed = combinedScriptFor(['gcra', 'token-bucket', 'fixed-window']);
  expect(mixed.algorithms).toEqual(['fixed-window', 'gcra', 'token-bucket']);
  expect(mixed.source).toMatch(
    /^-- >>> lua\/include\/prelude\.lua\n(.*\n)*-- >>> lua\/include\/combined\.lua\n/,
  );
  expect(mixed.source).not.toBe(scriptFor(['gcra', 'token-bucket', 'fixed-window']).source);
  for (const s of [mixed, batchScriptFor(mixed)]) {
    expect(await testRedis().script('LOAD', s.source)).toBe(s.sha1);
  }
});

test('the state key and the block key share the caller hash tag (one cluster slot)', () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: testRedis() }),
    policies: [fixedWindow({ limit: 3, window: '1m' }), gcra({ limit: 3, window: '1s' })],
  });
  for (const key of ['u', 'user:12345', 'a}b{c']) {
    const keys = limiter.storageKeys(key);
    expect(keys).toHaveLength(2);
    expect(new Set(keys.map((k) => calculateSlot(k))).size).toBe(1);
  }
});

test('a fallback memory store keeps a key per policy while Redis keeps one', async () => {
  const time = { now: T0 + 100 };
  const fallback = memoryStore({ clock: () => time.now });
  const policies = [fixedWindow({ limit: 2, window: '1m' }), gcra({ limit: 5, window: '1s' })];
  const limiter = new RateLimiter({
    store: redisStore({ client: testRedis(), clock: () => time.now }),
    policies,
    onStoreError: fallback,
  });
  // The same policies on the fallback store itself: it sees what the fallback counted only if
  // the fallback was given the memory store's own keys.
  const onFallback = new RateLimiter({ store: fallback, policies });
  // A foreign value of another type at the state key makes Redis fail every decision.
  await testRedis().hset(limiter.storageKeys('u')[0]!, 'x', '1');
  const answers = [];
  for (let i = 0; i < 3; i++) {
    const d = await limiter.consume('u');
    answers.push([d.allowed, d.reason, d.policies.map((p) => p.remaining)]);
  }
  expect(answers).toEqual([
    [true, 'fallback', [1, 4]],
    [true, 'fallback', [0, 3]],
    [false, 'fallback', [0, 3]],
  ]);
  expect((await onFallback.peek('u')).policies.map((p) => p.remaining)).toEqual([0, 3]);
});
