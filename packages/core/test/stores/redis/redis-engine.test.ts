/**
 * The Redis engine on a real server: pinned SHA1s match SCRIPT LOAD, NOSCRIPT falls back to
 * EVAL, one EVALSHA (and one TIME) per decision whatever the number of policies, every key
 * has a TTL, and Redis errors surface as RateLimitStoreError without unhandled rejections.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import {
  connectIoredis,
  keysWithTtl,
  testRedisUrl,
  useOwnRedisServer,
  useTestRedis,
  workerDb,
} from '../../../../../test/harness/redis';
import {
  fixedWindow,
  gcra,
  RateLimiter,
  RateLimitStoreError,
  redisStore,
  slidingLog,
  tokenBucket,
} from '../../../src/index';
import { INJECTED_CLOCK_TTL_SLACK_MS } from '../../../src/stores/redis';
import {
  algorithmKinds,
  batchScriptFor,
  fixedScripts,
  scriptFor,
} from '../../../src/stores/scripts';
import { readPinnedScripts } from '../../lua/pinned';
import { limiterAt, T0 } from './redis-state';

const testRedis = useTestRedis();

const allFour = () => [
  fixedWindow({ limit: 3, window: '2s' }),
  slidingLog({ limit: 3, window: '3s' }),
  tokenBucket({ limit: 3, window: '4s' }),
  gcra({ limit: 3, window: '5s' }),
];

test('every script lua/scripts.sha1 pins is what the store sends, and loads under that SHA1', async () => {
  const pinned = readPinnedScripts();
  expect(pinned.map((p) => p.name)).toEqual(
    expect.arrayContaining(['engine', 'fixed-window', 'gcra-batch', 'token-bucket-combined']),
  );
  const sent = fixedScripts();
  expect(sent.map((s) => [s.name, s.sha1])).toEqual(pinned.map((p) => [p.name, p.sha1]));
  for (const script of sent) {
    expect(await testRedis().script('LOAD', script.source)).toBe(script.sha1);
  }
});

test('a mixed limiter runs a script of just its algorithms, from the same assembler', async () => {
  for (const kind of algorithmKinds()) expect(scriptFor([kind, kind])).toBe(scriptFor([kind]));
  const engine = scriptFor(algorithmKinds());
  expect(engine.name).toBe('engine');
  const mixed = scriptFor(['gcra', 'fixed-window', 'gcra']);
  expect(mixed).toBe(scriptFor(['fixed-window', 'gcra']));
  expect(mixed.name).toBe('fixed-window+gcra');
  expect(mixed.algorithms).toEqual(['fixed-window', 'gcra']);
  // Its parts are the prelude, its algorithms' files (no other), the block steps and the engine,
  // every one a file of lua/ (the assembler writes no part of its own).
  const parts = mixed.source.match(/^-- >>> \S+$/gm);
  expect(parts).toEqual([
    '-- >>> lua/include/prelude.lua',
    '-- >>> lua/fixed-window.lua',
    '-- >>> lua/gcra.lua',
    '-- >>> lua/include/blocks.lua',
    '-- >>> lua/include/engine.lua',
    '-- >>> lua/include/several.lua',
  ]);
  expect(await testRedis().script('LOAD', mixed.source)).toBe(mixed.sha1);
  // Two algorithms that share steps: each step is defined once.
  const sharing = scriptFor(['smooth-bursty', 'token-bucket']);
  expect(sharing.source.split('local function set_pair(').length).toBe(2);
  // Inline steps (`--- @inline`) are written out where they are called, and defined nowhere.
  expect(sharing.source).not.toMatch(
    /local function (get_pair|refill|closed)\b|\b(get_pair|refill|closed)\(/,
  );
  expect(await testRedis().script('LOAD', sharing.source)).toBe(sharing.sha1);
  // And it decides: 2 per second and 3 per minute on one key.
  const limiter = new RateLimiter({
    store: redisStore({ client: testRedis() }),
    policies: [gcra({ limit: 2, window: '1s' }), fixedWindow({ limit: 3, window: '1m' })],
  });
  const decisions = [];
  for (let i = 0; i < 3; i++) decisions.push((await limiter.consume('mixed')).allowed);
  expect(decisions).toEqual([true, true, false]);
});

test("a mixed limiter's batch script makes the engine when a call needs it", async () => {
  const mixed = batchScriptFor(scriptFor(['gcra', 'fixed-window']));
  expect(mixed.name).toBe('fixed-window+gcra-batch');
  expect(await testRedis().script('LOAD', mixed.source)).toBe(mixed.sha1);
  // The engine's state is made when a call needs it (make_engine), not by every batch.
  const [beforeEngine] = mixed.source.split('local function make_engine()');
  expect(beforeEngine).not.toMatch(/local VALUES|local function block_steps/);
  expect(mixed.source).toMatch(/local function make_engine\(\)\n(.*\n)*local VALUES/);
  // Only a one-algorithm batch script keeps an algorithm's lone decider (`--- @if solo batch`).
  expect(mixed.source).not.toMatch(/fixed_window_lone|^LONE = /m);
  const fixedWindowBatch = batchScriptFor(scriptFor(['fixed-window']));
  expect(fixedWindowBatch.source).toMatch(/^LONE = fixed_window_lone$/m);
  expect(scriptFor(['fixed-window']).source).not.toMatch(/fixed_window_lone|\bLONE\b/);
});

// The script cache and the command counters are server-wide, and other jest workers share the
// suite's server: these tests get a server of their own so nothing else can touch either.
describe('on a server of its own: script cache and round trips', () => {
  const own = useOwnRedisServer();
  let client: Redis;
  beforeAll(() => {
    client = own().client;
  });

  async function stats(): Promise<Record<string, number>> {
    const info = await client.info('commandstats');
    const out: Record<string, number> = {};
    for (const m of info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) out[m[1]!] = Number(m[2]);
    return out;
  }

  test('after SCRIPT FLUSH the next decision succeeds through EVAL, which caches the script again', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: gcra({ limit: 2, window: '1s' }),
    });
    expect(await client.script('EXISTS', scriptFor(['gcra']).sha1)).toEqual([0]);
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect(await client.script('EXISTS', scriptFor(['gcra']).sha1)).toEqual([1]);
    await client.script('FLUSH');
    const d = await limiter.consume('k');
    expect(d).toMatchObject({ allowed: true, remaining: 0 });
    expect(d.reason).toBeUndefined();
  });

  test.each([1, 4])('one EVALSHA and one TIME per decision with %i policies', async (n) => {
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: allFour().slice(0, n),
    });
    await limiter.consume('warm-up'); // loads the script
    const before = await stats();
    for (let i = 0; i < 10; i++) await limiter.consume(`user${i % 3}`);
    await limiter.peek('user0');
    const after = await stats();
    const delta = (cmd: string) => (after[cmd] ?? 0) - (before[cmd] ?? 0);
    expect(delta('evalsha')).toBe(11);
    expect(delta('eval')).toBe(0);
    expect(delta('time')).toBe(11);
  });

  test.each([1, 4])(
    'one EVALSHA per refund, block, unblock and lockout with %i policies',
    async (n) => {
      const policies = [
        fixedWindow({ limit: 1, window: '2s', blockDuration: '1m' }),
        slidingLog({ limit: 3, window: '3s', blockDuration: { initial: '1s' } }),
        tokenBucket({ limit: 3, window: '4s', blockDuration: '2m' }),
        gcra({ limit: 3, window: '5s' }),
      ].slice(0, n);
      const limiter = new RateLimiter({ store: redisStore({ client }), policies });
      await limiter.consume('warm-up'); // loads the script
      const before = await stats();
      await limiter.consume('u'); // admitted
      await limiter.refund('u', { cost: 1 });
      await limiter.consume('u');
      const locked = await limiter.consume('u'); // denied by fixedWindow: the lockout is written
      await limiter.unblock('u');
      await limiter.block('u', '1h');
      const blocked = await limiter.consume('u');
      await limiter.block('v', 'forever');
      const after = await stats();
      expect(locked).toMatchObject({ allowed: false, reason: 'blocked', retryAfter: 60_000 });
      expect(blocked).toMatchObject({ allowed: false, reason: 'blocked' });
      expect(blocked.retryAfter).toBeGreaterThan(3_590_000);
      const delta = (cmd: string) => (after[cmd] ?? 0) - (before[cmd] ?? 0);
      expect(delta('evalsha')).toBe(8);
      expect(delta('eval')).toBe(0);
    },
  );

  test('a fixedWindow alone counts first: one INCRBY per admitted decision, DECRBY back on a denial', async () => {
    const time = { now: T0 + 100 };
    const packed = limiterAt(client, fixedWindow({ limit: 3, window: '1h' }), time, 'fwa');
    const large = limiterAt(client, fixedWindow({ limit: 1e12, window: '1h' }), time, 'fwb');
    await client.flushdb();
    const before = await stats();
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await packed.consume('u')).allowed);
    expect(await packed.peek('u')).toMatchObject({ allowed: false, remaining: 0 });
    await large.consume('u', { cost: 7 });
    const after = await stats();
    const [key] = packed.storageKeys('u');
    const index = Math.floor((T0 + 100) / 3_600_000);
    const delta = (cmd: string) => (after[cmd] ?? 0) - (before[cmd] ?? 0);
    expect(answers).toEqual([true, true, true, false]);
    // The window's first count is written whole with its TTL (the key held nothing of this
    // window); the next ones are an INCRBY each; the denial takes its INCRBY back.
    expect(await client.get(key!)).toBe(String(index * 4 + 3));
    expect(delta('incrby')).toBe(5);
    expect(delta('set')).toBe(1);
    expect(delta('decrby')).toBe(1);
    // A window's first count at <base>:<index> gets its TTL from PEXPIRE.
    expect(delta('pexpire')).toBe(1);
    // GET: the block state on each of the 6 calls, the count only for the peek, and the base
    // key of <base>:<index> on its window's first count (a debt it may carry, none here).
    expect(delta('get')).toBe(8);
    expect(await client.pttl(key!)).toBeGreaterThan(0);
    expect(await client.pttl(`${large.storageKeys('u')[0]}:${index}`)).toBeGreaterThan(0);
  });
});

describe('TTLs', () => {
  test('with Redis TIME every key expires within its own window, and none is left without a TTL', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: testRedis() }),
      policies: allFour(),
    });
    for (let i = 0; i < 40; i++) await limiter.consume(`u${i % 5}`, { cost: i % 3 });
    const keys = await keysWithTtl(testRedis());
    // 5 users × 4 policies (a fixed window may add a key if the run crosses its edge).
    expect(keys.length).toBeGreaterThanOrEqual(20);
    for (const { key, pttl } of keys) {
      const windowMs = limiter.policies.find((p) => key.includes(`:${p.id}`))!.window;
      // 0 is a key expiring while it is read (a short window's end); -1 would be no TTL at all.
      expect(pttl).toBeGreaterThanOrEqual(0);
      expect(pttl).toBeLessThanOrEqual(windowMs);
    }
  });

  test('with an injected clock TTLs follow that clock, plus the documented slack', async () => {
    let now = 1_700_000_000_000;
    const limiter = new RateLimiter({
      store: redisStore({ client: testRedis(), clock: () => now }),
      policies: allFour(),
    });
    await limiter.consume('u');
    now += 500;
    await limiter.consume('u');
    for (const { pttl } of await keysWithTtl(testRedis())) {
      expect(pttl).toBeGreaterThan(INJECTED_CLOCK_TTL_SLACK_MS);
      expect(pttl).toBeLessThanOrEqual(5000 + INJECTED_CLOCK_TTL_SLACK_MS);
    }
  });

  test('blocks live as long as the block (plus forgetAfter when progressive); only a block for ever has no TTL', async () => {
    const redis = testRedis();
    const ttlOf = async (key: string) => {
      const [found] = (await keysWithTtl(redis)).filter((k) => k.key === key);
      return found?.pttl;
    };
    const plain = new RateLimiter({
      store: redisStore({ client: redis }),
      policies: gcra({ limit: 1, window: '1s', blockDuration: '1m' }),
      prefix: 'plain',
    });
    const [gcraKey, plainBlock] = plain.storageKeys('u');
    await plain.consume('u');
    expect(await ttlOf(gcraKey!)).toBeGreaterThan(0);
    expect(await plain.consume('u')).toMatchObject({ reason: 'blocked', retryAfter: 60_000 });
    // The lockout cleared the policy: it starts fresh when the block ends.
    expect(await ttlOf(gcraKey!)).toBeUndefined();
    expect(await ttlOf(plainBlock!)).toBeGreaterThan(59_000);
    expect(await ttlOf(plainBlock!)).toBeLessThanOrEqual(60_000);

    const progressive = new RateLimiter({
      store: redisStore({ client: redis }),
      policies: gcra({
        limit: 1,
        window: '1s',
        blockDuration: { initial: '10s', forgetAfter: '1h' },
      }),
      prefix: 'progressive',
    });
    const progressiveBlock = progressive.storageKeys('u')[1]!;
    await progressive.consume('u');
    await progressive.consume('u');
    expect(await ttlOf(progressiveBlock)).toBeGreaterThan(3_600_000);
    expect(await ttlOf(progressiveBlock)).toBeLessThanOrEqual(3_610_000);

    await plain.block('v', '5s');
    expect(await ttlOf(plain.storageKeys('v')[1]!)).toBeLessThanOrEqual(5000);
    await plain.block('w', 'forever');
    expect(await ttlOf(plain.storageKeys('w')[1]!)).toBe(-1);
    await plain.unblock('w');
    expect(await ttlOf(plain.storageKeys('w')[1]!)).toBeUndefined();
    // Every other key has a TTL.
    for (const { pttl } of await keysWithTtl(redis)) expect(pttl).toBeGreaterThanOrEqual(0);
  });

  test('a refund never creates a key, and one that empties a key deletes it', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: testRedis() }),
      policies: allFour(),
    });
    await limiter.refund('r', { cost: 5 });
    expect(await keysWithTtl(testRedis())).toEqual([]);
    await limiter.consume('r', { cost: 2 });
    await limiter.refund('r', { cost: 1 });
    const keys = await keysWithTtl(testRedis());
    expect(keys.length).toBe(4);
    for (const { key, pttl } of keys) {
      const windowMs = limiter.policies.find((p) => key.includes(`:${p.id}`))!.window;
      expect(pttl).toBeGreaterThanOrEqual(0);
      expect(pttl).toBeLessThanOrEqual(windowMs);
    }
    await limiter.refund('r', { cost: 1 });
    // fixedWindow keeps its window's count (0) until the window ends; the others are gone.
    expect((await keysWithTtl(testRedis())).length).toBeLessThanOrEqual(1);
  });

  test('denied requests, peeks, cost 0 and resets write nothing', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: testRedis() }),
      policies: allFour(),
    });
    await limiter.peek('p', { cost: 2 });
    await limiter.consume('p', { cost: 0 });
    await limiter.consume('p', { cost: 9 });
    expect(await keysWithTtl(testRedis())).toEqual([]);
    await limiter.consume('p');
    await limiter.reset('p');
    expect(await keysWithTtl(testRedis())).toEqual([]);
  });
});

describe('errors', () => {
  test('a closed ioredis client: the store rejects with RateLimitStoreError; the limiter answers without an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const closed = connectIoredis();
      await closed.quit();
      const store = redisStore({ client: closed });
      const prepared = store.prepare([gcra({ limit: 1, window: '1s' })]);
      const error = await prepared.decide(['rl:{k}:x'], 1, false).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitStoreError);
      expect((error as RateLimitStoreError).code).toBe('FLOODGATE_STORE_ERROR');
      expect((error as RateLimitStoreError).cause).toBeInstanceOf(Error);

      const seen: unknown[] = [];
      const limiter = new RateLimiter({
        store,
        policies: gcra({ limit: 1, window: '1s' }),
        hooks: { onStoreError: (event) => seen.push(event.error) },
      });
      const d = await limiter.consume('k');
      expect(d.reason).toBe('store-error');
      expect(seen[0]).toBeInstanceOf(RateLimitStoreError);
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  test('a Redis error reply (WRONGTYPE) surfaces as RateLimitStoreError and leaves no key without TTL', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: testRedis() }),
      policies: [gcra({ limit: 5, window: '1s' }), fixedWindow({ limit: 5, window: '1s' })],
    });
    const [gcraKey] = limiter.storageKeys('victim');
    await testRedis().lpush(gcraKey!, 'not a timestamp');
    await testRedis().pexpire(gcraKey!, 60_000);
    const prepared = limiter.store.prepare(limiter.policies);
    const error = await prepared
      .decide(limiter.storageKeys('victim'), 1, false)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitStoreError);
    expect(String((error as Error).message)).toMatch(/WRONGTYPE/);
    for (const { pttl } of await keysWithTtl(testRedis())) expect(pttl).toBeGreaterThan(0);
  });

  test('a node-redis client runs the same scripts', async () => {
    const client = createClient({ url: testRedisUrl(), database: workerDb() });
    await client.connect();
    try {
      const limiter = new RateLimiter({ store: redisStore({ client }), policies: allFour() });
      expect(limiter.store).toMatchObject({ client: { description: 'node-redis client' } });
      const first = await limiter.consume('nr', { cost: 3 });
      expect(first).toMatchObject({ allowed: true, remaining: 0 });
      expect((await limiter.consume('nr')).allowed).toBe(false);
    } finally {
      await client.quit();
    }
  });
});
