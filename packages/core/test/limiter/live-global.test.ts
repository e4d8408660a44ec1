/**
 * Live limits for every key (`setLimit('*')`) through the limiter, on memory and Redis: the
 * change reaches every key, each key's counts carried lazily (on its next call) as `carry`
 * says, a key's own override beats it, a ttl makes it lapse, clearLimit('*') goes back, and
 * its arguments are validated as strictly as options. Across processes:
 * test/resilience/live-global-processes.test.ts.
 */
import { Redis } from 'ioredis';
import { keysWithTtl, useTestRedis } from '../../../../test/harness/redis';
import { startRedisServer } from '../../../../test/harness/redis-server';
import {
  type Carry,
  fixedWindow,
  gcra,
  memoryStore,
  RateLimiter,
  redisStore,
  type Store,
  slidingWindow,
  smoothBursty,
  tokenBucket,
} from '../../src/index';

const testRedis = useTestRedis();

let prefixes = 0;
// A day boundary, so that each test stays in one day's window.
const START = 1_700_006_400_000;
let now = START;
const clock = () => now;
beforeEach(() => {
  now = START;
});

const stores: Array<[string, () => Store]> = [
  ['memory', () => memoryStore({ clock })],
  ['redis', () => redisStore({ client: testRedis(), clock })],
];

describe.each(stores)("the override for every key ('*') on the %s store", (_name, makeStore) => {
  const made: RateLimiter[] = [];
  const limiter = (policies = [fixedWindow({ limit: 10, window: '1h', name: 'q' })]) => {
    const l = new RateLimiter({
      store: makeStore(),
      policies,
      prefix: `global${prefixes++}`,
      liveLimits: true,
    });
    made.push(l);
    return l;
  };
  afterAll(async () => {
    for (const l of made) await l.close();
  });
  const remaining = async (l: RateLimiter, key: string) =>
    (await l.peek(key, { cost: 0 })).remaining;
  const use = async (l: RateLimiter, key: string, n: number) => {
    for (let i = 0; i < n; i++) expect((await l.consume(key)).allowed).toBe(true);
  };

  it.each<[Carry, number]>([
    ['as-is', 5],
    ['proportional', 10],
    ['additive', 15],
    ['reset', 20],
  ])('10 → 20 with 5 used, carry %s: the key has %i left at its next call', async (carry, left) => {
    const l = limiter();
    await use(l, 'a', 5);
    await l.setLimit('*', { policy: 'q', limit: 20 }, { carry });
    expect(await remaining(l, 'a')).toBe(left);
    expect(await remaining(l, 'fresh')).toBe(20);
    // Carried once: the next calls keep counting from there.
    await use(l, 'a', 1);
    expect(await remaining(l, 'a')).toBe(left - 1);
    expect((await l.consume('a')).limit).toBe(20);
  });

  it('a key decided under an earlier global limit is carried from it, and back when cleared', async () => {
    const l = limiter();
    await use(l, 'a', 4);
    await l.setLimit('*', { policy: 'q', limit: 20 }, { carry: 'additive' });
    expect(await remaining(l, 'a')).toBe(16);
    await l.setLimit('*', { policy: 'q', limit: 100_000 }, { carry: 'additive' });
    expect(await remaining(l, 'a')).toBe(100_000 - 4);
    await l.clearLimit('*', { carry: 'additive' });
    expect(await remaining(l, 'a')).toBe(6);
    expect((await l.consume('b')).limit).toBe(10);
  });

  it("a key's own override beats the global one; cleared, the key falls to the global one", async () => {
    const l = limiter();
    await l.setLimit('vip', { policy: 'q', limit: 30 });
    await use(l, 'vip', 3);
    await l.setLimit('*', { policy: 'q', limit: 5 }, { carry: 'additive' });
    expect((await l.consume('vip')).limit).toBe(30);
    expect((await l.consume('other')).limit).toBe(5);
    expect((await l.getLimit('vip')).q).toMatchObject({ limit: 30, overridden: true });
    expect((await l.getLimit('other')).q).toMatchObject({ limit: 5, overridden: true });
    await l.clearLimit('vip', { carry: 'additive' });
    // 4 used of 30 → the global 5 leaves 1.
    expect(await remaining(l, 'vip')).toBe(1);
    expect((await l.consume('vip')).limit).toBe(5);
  });

  it('a ttl makes the override lapse in every key; getLimit shows it', async () => {
    const l = limiter([
      fixedWindow({ limit: 10, window: '1d', name: 'q' }),
      gcra({ limit: 100, window: '1h', name: 'g' }),
    ]);
    await use(l, 'a', 2);
    await l.setLimit('*', { policy: 'q', limit: 3 }, { carry: 'additive', ttl: '1h' });
    expect(await l.getLimit('*')).toEqual({
      q: {
        limit: 3,
        window: 86_400_000,
        capacity: 3,
        overridden: true,
        expiresAt: now + 3_600_000,
      },
      g: { limit: 100, window: 3_600_000, burst: 100, capacity: 100, overridden: false },
    });
    expect(await remaining(l, 'a')).toBe(1);
    await use(l, 'a', 1);
    expect((await l.consume('a')).allowed).toBe(false);
    now += 3_600_000;
    // Lapsed: back to 10 with the 3 used carried (additive).
    expect(await remaining(l, 'a')).toBe(7);
    expect((await l.consume('new')).limit).toBe(10);
  });

  it("after the override's ttl lapsed, getLimit('*') answers the policies' own parameters, as after clearLimit('*')", async () => {
    const l = limiter([
      fixedWindow({ limit: 10, window: '1d', name: 'q' }),
      gcra({ limit: 100, window: '1h', name: 'g' }),
    ]);
    const own = await l.getLimit('*');
    await l.setLimit('*', { policy: 'q', limit: 3 }, { ttl: '1h' });
    await use(l, 'a', 1);
    now += 3_600_000;
    expect(await l.getLimit('*')).toEqual(own);
    expect(await l.getLimit('a')).toEqual(own);
    expect(await l.getLimit('never-called')).toEqual(own);
    await l.clearLimit('*');
    expect(await l.getLimit('*')).toEqual(own);
  });

  it("after a key's own override lapsed, getLimit(key) answers the parameters its decisions use", async () => {
    const l = limiter([
      fixedWindow({ limit: 10, window: '1d', name: 'q' }),
      gcra({ limit: 100, window: '1h', name: 'g' }),
    ]);
    const own = await l.getLimit('vip');
    await l.setLimit('vip', { policy: 'g', limit: 7 }, { ttl: '1m' });
    expect((await l.getLimit('vip')).g).toMatchObject({ limit: 7, overridden: true });
    now += 60_000;
    expect(await l.getLimit('vip')).toEqual(own);
    // Under an override for every key, the lapsed own one falls to it.
    await l.setLimit('vip', { policy: 'g', limit: 7 }, { ttl: '1m' });
    await l.setLimit('*', { policy: 'g', limit: 50 });
    now += 60_000;
    expect((await l.getLimit('vip')).g).toMatchObject({ limit: 50, overridden: true });
    expect((await l.consume('vip')).policies.find((p) => p.name === 'g')?.limit).toBe(50);
  });

  it("a change of one policy for every key keeps the other policies' overrides, as for one key", async () => {
    const l = limiter([
      fixedWindow({ limit: 10, window: '1d', name: 'q' }),
      gcra({ limit: 100, window: '1h', name: 'g' }),
    ]);
    await l.setLimit('*', { policy: 'q', limit: 3 });
    await l.setLimit('*', { policy: 'g', limit: 50 });
    await l.setLimit('*', { policy: 'q', limit: 4 });
    expect(await l.getLimit('*')).toMatchObject({
      q: { limit: 4, overridden: true },
      g: { limit: 50, overridden: true },
    });
    expect((await l.consume('a')).policies.map((p) => p.limit)).toEqual([4, 50]);
    // A lapsed override is not kept by a later change.
    await l.setLimit('*', { policy: 'q', limit: 5 }, { ttl: '1m' });
    now += 60_000;
    await l.setLimit('*', { policy: 'g', limit: 60 });
    expect(await l.getLimit('*')).toMatchObject({
      q: { limit: 10, overridden: false },
      g: { limit: 60, overridden: true },
    });
  });

  it("resetAll removes the override for every key, the keys' own overrides and marks: back to the own parameters", async () => {
    const l = limiter();
    await l.setLimit('*', { policy: 'q', limit: 20 });
    await l.setLimit('vip', { policy: 'q', limit: 30 });
    await use(l, 'a', 3);
    await use(l, 'vip', 3);
    await l.resetAll();
    expect((await l.getLimit('*')).q).toMatchObject({ limit: 10, overridden: false });
    expect((await l.getLimit('vip')).q).toMatchObject({ limit: 10, overridden: false });
    expect(await remaining(l, 'a')).toBe(10);
    expect((await l.consume('vip')).limit).toBe(10);
    // A new override for every key after it applies from the limiter's own parameters.
    await use(l, 'a', 2);
    await l.setLimit('*', { policy: 'q', limit: 20 }, { carry: 'additive' });
    expect(await remaining(l, 'a')).toBe(18);
  });

  it('a smoothBursty key idle for half an hour is still carried: its mark outlives its state (kept an hour)', async () => {
    const l = limiter([smoothBursty({ limit: 10, window: '1s', name: 'sb' })]);
    await l.setLimit('*', { policy: 'sb', limit: 40 }, { carry: 'reset' });
    await use(l, 'a', 1);
    // Idle: the key stores 40 permits of the override (a second's worth), kept an hour.
    now += 30 * 60_000;
    await l.clearLimit('*', { carry: 'reset' });
    // Emptied ('reset') under the limiter's own parameters: as a key never used.
    const d = await l.peek('a', { cost: 0 });
    const fresh = await l.peek('never-used', { cost: 0 });
    expect([d.limit, d.remaining, d.resetAfter]).toEqual([10, fresh.remaining, fresh.resetAfter]);
  });

  it('works with algorithms whose state layout depends on the parameters', async () => {
    const l = limiter([
      slidingWindow({ limit: 6, window: '1m', buckets: 6, name: 's' }),
      tokenBucket({ limit: 4, window: '1s', burst: 8, name: 't' }),
    ]);
    await use(l, 'a', 3);
    await l.setLimit(
      '*',
      [
        { policy: 's', limit: 60_000, window: '1h' },
        { policy: 't', limit: 1000, burst: 2000 },
      ],
      { carry: 'additive' },
    );
    const d = await l.peek('a', { cost: 0 });
    expect(d.policies.map((p) => [p.name, p.limit, p.remaining])).toEqual([
      ['s', 60_000, 60_000 - 3],
      ['t', 2000, 2000 - 3],
    ]);
    await l.clearLimit('*', { carry: 'additive' });
    const back = await l.peek('a', { cost: 0 });
    expect(back.policies.map((p) => [p.name, p.limit, p.remaining])).toEqual([
      ['s', 6, 3],
      ['t', 8, 5],
    ]);
  });

  it('refuses bad arguments naming the field, and changes nothing', async () => {
    const l = limiter([
      fixedWindow({ limit: 10, window: '1h', name: 'q' }),
      smoothBursty({ limit: 10, window: '1s', name: 'sm' }),
    ]);
    const cases: Array<[unknown, unknown, string]> = [
      [{ policy: 'nope', limit: 1 }, {}, 'setLimit.policy'],
      [{ policy: 'q', limit: -1 }, {}, 'setLimit.limit'],
      [{ policy: 'q', limit: 1, window: 'soon' }, {}, 'setLimit.window'],
      [{ policy: 'q', limit: 1 }, { ttl: -5 }, 'setLimit.options.ttl'],
      [{ policy: 'q', limit: 1 }, { carry: 'some' }, 'setLimit.options.carry'],
      [{ policy: 'sm', limit: 1 }, { carry: 'as-is' }, 'setLimit.options.carry'],
      [{ policy: 'q', limit: 1, extra: 1 }, {}, 'setLimit.extra'],
    ];
    for (const [override, options, field] of cases) {
      const error = await l.setLimit('*', override as never, options as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ name: 'RateLimitConfigError', field });
      expect((error as Error).message).toContain(field);
    }
    await expect(l.clearLimit('*', { carry: 'as-is' })).rejects.toMatchObject({
      field: 'clearLimit.options.carry',
    });
    expect((await l.getLimit('*')).q).toMatchObject({ limit: 10, overridden: false });
    expect((await l.consume('k')).limit).toBe(10);
  });
});

it('on Redis, the record is one key of its own, each key marks which global parameters its state is in, and both expire', async () => {
  const redis = testRedis();
  const l = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 10, window: '1m', name: 'q' })],
    prefix: 'rec',
    liveLimits: true,
  });
  await l.consume('alice');
  await l.setLimit('*', { policy: 'q', limit: 20 }, { ttl: '1h' });
  await l.consume('alice');
  const keys = await keysWithTtl(redis);
  const record = keys.find((k) => k.key.endsWith(':global'));
  const mark = keys.find((k) => k.key.startsWith('rec:{alice}:lm'));
  expect(record?.key).toMatch(/^rec:lm[0-9A-Za-z]+:global$/);
  expect(record?.pttl).toBeGreaterThan(3_600_000);
  // The key's block key holds its live state: its mark alone (no block, no override of its own).
  expect(mark?.key).toMatch(/^rec:\{alice\}:lm[0-9A-Za-z_-]+$/);
  expect(await redis.get(mark!.key)).toMatch(/^\n\n\n\d+\|as-is\|1 /);
  // The mark outlives the key's state (a 1-minute window), and no more than twice over.
  expect(mark?.pttl).toBeGreaterThan(60_000);
  expect(mark?.pttl).toBeLessThanOrEqual(2 * 60_000 + 1000);
  expect(keys.every((k) => k.pttl > 0)).toBe(true);
  await l.close();
});

it("on Redis, a key's block, overrides and mark share its one key, which lives as long as the longest-lived part needs", async () => {
  const redis = testRedis();
  const l = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [
      fixedWindow({ limit: 10, window: '1m', name: 'q' }),
      fixedWindow({ limit: 10, window: '1m', name: 'r' }),
    ],
    prefix: 'one',
    liveLimits: true,
  });
  // '<block>\n<overrides' deadline>\n<overrides>\n<mark>'
  const liveKey = (key: string) => l.storageKeys(key).at(-1)!;
  const value = (key: string) => redis.get(liveKey(key));
  const pttl = (key: string) => redis.pttl(liveKey(key));
  const limits = async (key: string) => (await l.consume(key)).policies.map((p) => p.limit);
  expect(l.storageKeys('alice')).toHaveLength(3);
  await l.setLimit('*', { policy: 'r', limit: 20 });
  // An override of its own without a ttl: the key is kept for good, the mark with it.
  await l.setLimit('alice', { policy: 'q', limit: 30 });
  await l.consume('alice');
  expect(await value('alice')).toMatch(/^\n\n0\|as-is\|1 [^\n]*\n\d+\|as-is\|2 [^\n]*$/);
  expect(await pttl('alice')).toBe(-1);
  // One with a ttl of an hour: each call renews the mark, never shortening the key.
  await l.setLimit('bob', { policy: 'q', limit: 30 }, { ttl: '1h' });
  for (let i = 0; i < 3; i++) await l.consume('bob');
  expect(await value('bob')).toMatch(/^\n\d+\n[1-9]\d*\|as-is\|1 [^\n]*\n\d+\|as-is\|2 /);
  expect(await pttl('bob')).toBeGreaterThan(3_600_000);
  expect(await limits('bob')).toEqual([30, 20]);
  // A block keeps the rest, and its own TTL counts too; unblock and reset keep the overrides.
  await l.block('bob', '3h');
  expect(await value('bob')).toMatch(/^\d+:0:0:0\n\d+\n[1-9]\d*\|as-is\|1 [^\n]*\n\d+\|as-is\|2 /);
  expect(await pttl('bob')).toBeGreaterThan(3 * 3_600_000 - 60_000);
  expect((await l.consume('bob')).allowed).toBe(false);
  await l.unblock('bob');
  expect(await value('bob')).toMatch(/^\n\d+\n[1-9]\d*\|as-is\|1 /);
  await l.reset('bob');
  expect(await limits('bob')).toEqual([30, 20]);
  // Cleared: the mark alone is left, with the mark's PX (twice the 1-minute window, and 1 s).
  await l.clearLimit('bob');
  expect(await value('bob')).toMatch(/^\n\n\n\d+\|as-is\|2 /);
  expect(await pttl('bob')).toBeGreaterThan(60_000);
  expect(await pttl('bob')).toBeLessThanOrEqual(2 * 60_000 + 1000);
  // No override for every key either: the next call carries bob back, and the key goes.
  await l.clearLimit('*');
  expect(await limits('bob')).toEqual([10, 10]);
  expect(await redis.exists(liveKey('bob'))).toBe(0);
  // alice keeps her own override, now without a mark, still for good.
  expect(await limits('alice')).toEqual([30, 10]);
  expect(await value('alice')).toMatch(/^\n\n0\|as-is\|1 [^\n]*\n$/);
  expect(await pttl('alice')).toBe(-1);
  // A block for ever on a key without live state: that key alone, and for good.
  await l.block('carol', 'forever');
  expect(await value('carol')).toBe('0:0:0:0\n\n\n');
  expect(await pttl('carol')).toBe(-1);
  await l.unblock('carol');
  expect(await redis.exists(liveKey('carol'))).toBe(0);
  await l.close();
});

it('on Redis, resetAll leaves no key of the limiter: its record for every key, the overrides and marks, the states', async () => {
  const redis = testRedis();
  const l = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 10, window: '1m', name: 'q' })],
    prefix: 'gone',
    liveLimits: true,
  });
  const other = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 10, window: '1m', name: 'q' })],
    prefix: 'kept',
    liveLimits: true,
  });
  for (const limiter of [l, other]) {
    await limiter.setLimit('*', { policy: 'q', limit: 20 });
    await limiter.setLimit('vip', { policy: 'q', limit: 30 }, { ttl: '1h' });
    await limiter.consume('alice');
    await limiter.consume('vip');
  }
  const before = (await keysWithTtl(redis)).map((k) => k.key);
  const mine = before.filter((k) => k.startsWith('gone:'));
  // The record, alice's state and mark, vip's state and override.
  const named = (key: string) =>
    key.replace(/lm[0-9A-Za-z]+/, 'lm').replace(/\}:(?!lm)[0-9A-Za-z]+$/, '}:state');
  expect(mine.map(named).sort()).toEqual(
    [
      'gone:lm:global',
      'gone:{alice}:lm',
      'gone:{alice}:state',
      'gone:{vip}:lm',
      'gone:{vip}:state',
    ].sort(),
  );
  expect(await l.resetAll()).toBe(mine.length);
  const after = (await keysWithTtl(redis)).map((k) => k.key);
  expect(after.filter((k) => k.startsWith('gone:'))).toEqual([]);
  expect(after.sort()).toEqual(before.filter((k) => !k.startsWith('gone:')).sort());
  expect((await l.consume('bob')).limit).toBe(10);
  expect((await other.consume('bob')).limit).toBe(20);
  await l.close();
  await other.close();
});

it("on Redis, a key's mark outlives its smoothBursty state (kept an hour)", async () => {
  const redis = testRedis();
  const l = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [smoothBursty({ limit: 10, window: '1s', name: 'sb' })],
    prefix: 'sb',
    liveLimits: true,
  });
  await l.setLimit('*', { policy: 'sb', limit: 40 }, { carry: 'reset' });
  await l.consume('alice');
  const keys = await keysWithTtl(redis);
  const mark = keys.find((k) => k.key.startsWith('sb:{alice}:lm'))!;
  const state = keys.find((k) => k.key.startsWith('sb:{alice}') && k !== mark)!;
  expect(state.pttl).toBeGreaterThan(3_600_000);
  expect(mark.pttl).toBeGreaterThan(state.pttl);
  await l.close();
});

it('on Redis with an injected clock, the record gets the slack every key gets (Redis expires it on its own clock)', async () => {
  const redis = testRedis();
  const l = new RateLimiter({
    store: redisStore({ client: redis, clock: () => START }),
    policies: [fixedWindow({ limit: 10, window: '1m', name: 'q' })],
    prefix: 'slack',
    liveLimits: true,
  });
  await l.setLimit('*', { policy: 'q', limit: 20 });
  await l.clearLimit('*');
  const record = (await keysWithTtl(redis)).find((k) => k.key.endsWith(':global'))!;
  // A cleared record lives as long as the marks (2 × 1 min + 1 s), plus INJECTED_CLOCK_TTL_SLACK_MS.
  expect(record.pttl).toBeGreaterThan(121_000 + 4_000);
  expect(record.pttl).toBeLessThanOrEqual(121_000 + 5_000);
  await l.close();
});

it('on Redis, a change of every key that finds the record replaced at each attempt gives up after 16, writing nothing', async () => {
  // Its own server: the suite's shared one has its script cache flushed by other jest workers,
  // and a NOSCRIPT would make one attempt two script calls.
  const server = await startRedisServer();
  const redis = new Redis(server.port);
  const policies = [fixedWindow({ limit: 10, window: '1m', name: 'q' })];
  const writer = new RateLimiter({
    store: redisStore({ client: redis }),
    policies,
    prefix: 'busy',
    liveLimits: true,
  });
  await writer.setLimit('*', { policy: 'q', limit: 20 });
  const key = (await keysWithTtl(redis)).find((k) => k.key.endsWith(':global'))!.key;
  const [version, ...rest] = (await redis.get(key))!.split('|');
  // Another process replaces the record just before each script call of this connection.
  const busy = new Redis(server.port);
  const send = busy.sendCommand.bind(busy);
  let replaced = 0;
  let last = '';
  busy.sendCommand = ((command: Parameters<typeof send>[0]) => {
    if (command.name !== 'evalsha' && command.name !== 'eval') return send(command);
    last = [String(BigInt(version!) + BigInt(++replaced)), ...rest].join('|');
    return redis.set(key, last).then(() => send(command));
  }) as typeof busy.sendCommand;
  const l = new RateLimiter({
    store: redisStore({ client: busy }),
    policies,
    prefix: 'busy',
    liveLimits: true,
  });
  try {
    await expect(l.setLimit('*', { policy: 'q', limit: 30 })).rejects.toMatchObject({
      name: 'RateLimitStoreError',
      message: expect.stringContaining('changed by others 16 times'),
    });
    // 16 attempts, one EVALSHA each (the writer's change loaded the script).
    expect(replaced).toBe(16);
    expect(await redis.get(key)).toBe(last);
  } finally {
    await l.close();
    await writer.close();
    busy.disconnect();
    redis.disconnect();
    await server.stop();
  }
});

it('on Redis, a record or a message that is not one is ignored: no poll or handler throws, decisions go on', async () => {
  const redis = testRedis();
  const l = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 10, window: '1m', name: 'q' })],
    prefix: 'bad',
    liveLimits: true,
  });
  await l.setLimit('*', { policy: 'q', limit: 20 }, { ttl: '1h' });
  const keys = await keysWithTtl(redis);
  const record = keys.find((k) => k.key.endsWith(':global'))!.key;
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  process.on('unhandledRejection', onRejection);
  try {
    await redis.set(record, 'not a record', 'PX', 60_000);
    await redis.publish(record, 'not a record either');
    // Two polls (every 500 ms) read the bad record.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const d = await l.consume('alice');
    expect(d.allowed).toBe(true);
    expect(rejections).toEqual([]);
  } finally {
    process.off('unhandledRejection', onRejection);
    await l.close();
  }
});
