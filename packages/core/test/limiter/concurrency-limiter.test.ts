/**
 * ConcurrencyLimiter (nginx limit_conn / semaphore with expiring leases): the same scenarios on
 * both stores with a fake clock, plus Redis specifics (TTLs, two connections, real contention,
 * pinned SHA1s).
 */
import type { Redis } from 'ioredis';
import { createClient } from 'redis';
import {
  connectIoredis,
  flushRedis,
  keysWithTtl,
  testRedisUrl,
  workerDb,
} from '../../../../test/harness/redis';
import {
  type ConcurrencyDecision,
  ConcurrencyLimiter,
  type Duration,
  memoryStore,
  RateLimitConfigError,
  redisStore,
  type Store,
} from '../../src/index';
import { fixedScripts } from '../../src/stores/scripts';
import { fakeClock, T0 } from '../conformance/table';

let redis: Redis;
let other: Redis;
beforeAll(() => {
  redis = connectIoredis();
  other = connectIoredis();
});
beforeEach(async () => {
  await flushRedis(redis);
});
afterAll(async () => {
  await redis.quit();
  await other.quit();
});

const stores: Array<[string, (clock: () => number) => Store]> = [
  ['memory', (clock) => memoryStore({ clock })],
  ['redis', (clock) => redisStore({ client: redis, clock })],
];

let run = 0;

describe.each(stores)('ConcurrencyLimiter on the %s store', (_name, makeStore) => {
  const setup = (limit: number, leaseTtl: Duration = 1000) => {
    const time = fakeClock();
    const store = makeStore(time.clock);
    const prefix = `cc${run++}`;
    const limiter = new ConcurrencyLimiter({ store, limit, leaseTtl, prefix });
    const at = (ms: number) => {
      time.now = T0 + ms;
    };
    return { limiter, store, prefix, at };
  };

  test('admits while fewer than limit leases are held; release frees a slot, idempotently', async () => {
    const { limiter, at } = setup(2);
    const a = await limiter.acquire('k');
    expect(a).toMatchObject({
      allowed: true,
      limit: 2,
      remaining: 1,
      resetAfter: 1000,
      retryAfter: 0,
      delay: 0,
      window: 1000,
      policy: 'concurrency-2',
    });
    expect(a.lease?.id).toEqual(expect.any(String));
    at(100);
    const b = await limiter.acquire('k');
    expect(b).toMatchObject({ allowed: true, remaining: 0, resetAfter: 1000 });
    expect(b.lease!.id).not.toBe(a.lease!.id);
    at(300);
    const c = await limiter.acquire('k');
    expect(c).toMatchObject({ allowed: false, remaining: 0, retryAfter: 700, resetAfter: 800 });
    expect(c.lease).toBeUndefined();
    expect(c.policies).toEqual([
      expect.objectContaining({ name: 'concurrency-2', allowed: false, retryAfter: 700 }),
    ]);
    expect(await a.lease!.release()).toBe(true);
    expect(await a.lease!.release()).toBe(false);
    const d = await limiter.acquire('k');
    expect(d).toMatchObject({ allowed: true, remaining: 0 });
    // Keys are independent.
    expect(await limiter.acquire('other')).toMatchObject({ allowed: true, remaining: 1 });
  });

  test('a crashed holder cannot leak a slot: its lease expires', async () => {
    const { limiter, at } = setup(1, '1s');
    const crashed = await limiter.acquire('k');
    at(999.999);
    expect(await limiter.acquire('k')).toMatchObject({ allowed: false, retryAfter: 0.001 });
    at(1000);
    const next = await limiter.acquire('k');
    expect(next).toMatchObject({ allowed: true, remaining: 0, resetAfter: 1000 });
    // Releasing the expired lease frees nothing and does not touch the new holder's slot.
    expect(await crashed.lease!.release()).toBe(false);
    expect(await limiter.acquire('k')).toMatchObject({ allowed: false, retryAfter: 1000 });
  });

  test('renew extends an unexpired lease; an expired one is not revived', async () => {
    const { limiter, at } = setup(1, 1000);
    const held = await limiter.acquire('k');
    at(800);
    expect(await held.lease!.renew()).toBe(true);
    at(1300);
    expect(await limiter.acquire('k')).toMatchObject({ allowed: false, retryAfter: 500 });
    at(1800);
    expect(await held.lease!.renew()).toBe(false);
    const next = await limiter.acquire('k');
    expect(next.allowed).toBe(true);
    expect(await held.lease!.release()).toBe(false);
    expect(await next.lease!.release()).toBe(true);
  });

  test('a lowered limit waits for enough leases to expire', async () => {
    const { limiter, store, prefix, at } = setup(3, 1000);
    for (const t of [0, 100, 200]) {
      at(t);
      expect((await limiter.acquire('k')).allowed).toBe(true);
    }
    const tighter = new ConcurrencyLimiter({ store, limit: 1, leaseTtl: 1000, prefix });
    at(300);
    expect(await tighter.acquire('k')).toMatchObject({
      allowed: false,
      remaining: 0,
      retryAfter: 900,
      resetAfter: 900,
    });
    at(1200);
    expect(await tighter.acquire('k')).toMatchObject({ allowed: true, remaining: 0 });
  });

  test('reset drops every lease of a key', async () => {
    const { limiter } = setup(1);
    const held = await limiter.acquire('k');
    await limiter.reset('k');
    expect((await limiter.acquire('k')).allowed).toBe(true);
    expect(await held.lease!.release()).toBe(false);
  });

  test('a call limit admits only while fewer leases than it are held, beside full-limit calls', async () => {
    const { limiter } = setup(3);
    const a = await limiter.acquire('k', { limit: 2 });
    expect(a).toMatchObject({ allowed: true, limit: 2, quota: 2, remaining: 1 });
    expect((await limiter.acquire('k', { limit: 2 })).remaining).toBe(0);
    const refused = await limiter.acquire('k', { limit: 2 });
    expect(refused).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
    // the slot above the share is left to calls with the full limit
    expect(await limiter.acquire('k')).toMatchObject({ allowed: true, limit: 3, remaining: 0 });
    expect((await limiter.acquire('k')).allowed).toBe(false);
    await a.lease!.release();
    expect((await limiter.acquire('k', { limit: 1 })).allowed).toBe(false); // 2 held ≥ 1
    expect((await limiter.acquire('k', { limit: 3 })).allowed).toBe(true);
  });

  test.each([0, 4, 1.5, '2', null])(
    'a call limit of %p is a RateLimitArgumentError',
    async (limit) => {
      const { limiter } = setup(3);
      await expect(limiter.acquire('k', { limit } as never)).rejects.toMatchObject({
        name: 'RateLimitArgumentError',
        argument: 'limit',
      });
      await expect(limiter.acquire('k', { cost: 1 } as never)).rejects.toThrow(/not a call option/);
    },
  );

  test.each([
    ['leaseTtl 0', { leaseTtl: 0 }, 'ConcurrencyLimiter.leaseTtl'],
    ['leaseTtl negative', { leaseTtl: -5 }, 'ConcurrencyLimiter.leaseTtl'],
    ['leaseTtl missing', { leaseTtl: undefined }, 'ConcurrencyLimiter.leaseTtl'],
    ['limit 0', { limit: 0 }, 'ConcurrencyLimiter.limit'],
    ['limit fractional', { limit: 1.5 }, 'ConcurrencyLimiter.limit'],
    ['prefix with a brace', { prefix: 'a{b' }, 'ConcurrencyLimiter.prefix'],
    ['store not a store', { store: {} }, 'ConcurrencyLimiter.store'],
    ['an unknown option', { burst: 2 }, 'ConcurrencyLimiter.burst'],
  ])('%s is a RateLimitConfigError naming the field', (_what, override, field) => {
    const options = { store: makeStore(() => T0), limit: 2, leaseTtl: '1s', ...override };
    let error: unknown;
    try {
      new ConcurrencyLimiter(options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as RateLimitConfigError).field).toBe(field);
  });
});

describe('ConcurrencyLimiter on the memory store', () => {
  test('bounded by maxKeys: expired keys make room, live ones are never dropped', async () => {
    const time = fakeClock();
    const store = memoryStore({ clock: time.clock, maxKeys: 2 });
    const limiter = new ConcurrencyLimiter({ store, limit: 1, leaseTtl: 1000 });
    expect((await limiter.acquire('a')).allowed).toBe(true);
    expect((await limiter.acquire('b')).allowed).toBe(true);
    const full = await limiter.acquire('c');
    expect(full).toMatchObject({ allowed: false, reason: 'store-full' });
    // a and b still hold their slots.
    expect((await limiter.acquire('a')).allowed).toBe(false);
    time.now += 1000;
    expect((await limiter.acquire('c')).allowed).toBe(true);
  });
});

describe('ConcurrencyLimiter on Redis', () => {
  test('the lease set has a TTL until its last lease expires; a denial writes nothing', async () => {
    const time = fakeClock();
    const limiter = new ConcurrencyLimiter({
      store: redisStore({ client: redis, clock: time.clock }),
      limit: 1,
      leaseTtl: '10s',
    });
    await limiter.acquire('k');
    const [entry] = await keysWithTtl(redis);
    expect(entry!.key).toBe('rl:{k}:leases');
    expect(entry!.pttl).toBeGreaterThan(10_000);
    const before = await redis.zrange('rl:{k}:leases', 0, -1, 'WITHSCORES');
    time.now += 5000;
    expect((await limiter.acquire('k')).allowed).toBe(false);
    expect(await redis.zrange('rl:{k}:leases', 0, -1, 'WITHSCORES')).toEqual(before);
  });

  test('two limiters on two connections share the slots of a key', async () => {
    const make = (client: Redis) =>
      new ConcurrencyLimiter({ store: redisStore({ client }), limit: 2, leaseTtl: '10s' });
    const a = make(redis);
    const b = make(other);
    const first = await a.acquire('job');
    expect((await b.acquire('job')).allowed).toBe(true);
    expect((await a.acquire('job')).allowed).toBe(false);
    expect(await first.lease!.release()).toBe(true);
    expect((await b.acquire('job')).allowed).toBe(true);
  });

  test('under contention exactly `limit` of many simultaneous acquires are admitted', async () => {
    const limiters = [redis, other].map(
      (client) =>
        new ConcurrencyLimiter({ store: redisStore({ client }), limit: 5, leaseTtl: '1m' }),
    );
    const decisions: ConcurrencyDecision[] = await Promise.all(
      Array.from({ length: 40 }, (_, i) => limiters[i % 2]!.acquire('hot')),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(await redis.zcard('rl:{hot}:leases')).toBe(5);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.retryAfter > 0)).toBe(true);
  });

  test('a node-redis client runs the same lease scripts (NOSCRIPT path included)', async () => {
    const client = createClient({ url: testRedisUrl(), database: workerDb() });
    await client.connect();
    try {
      const time = fakeClock();
      const limiter = new ConcurrencyLimiter({
        store: redisStore({ client, clock: time.clock }),
        limit: 1,
        leaseTtl: 1000,
      });
      const held = await limiter.acquire('nr');
      expect(held).toMatchObject({ allowed: true, remaining: 0, resetAfter: 1000 });
      time.now += 250;
      expect(await limiter.acquire('nr')).toMatchObject({ allowed: false, retryAfter: 750 });
      expect(await held.lease!.renew()).toBe(true);
      expect(await held.lease!.release()).toBe(true);
      expect(await held.lease!.release()).toBe(false);
      expect((await limiter.acquire('nr')).allowed).toBe(true);
    } finally {
      await client.quit();
    }
  });

  test('SCRIPT LOAD returns the generated SHA1 of every lease script', async () => {
    const scripts = fixedScripts().filter((s) => s.name.startsWith('lease-'));
    expect(scripts.map((s) => s.name).sort()).toEqual([
      'lease-acquire',
      'lease-release',
      'lease-renew',
      'lease-reset',
    ]);
    for (const s of scripts) expect(await redis.script('LOAD', s.source)).toBe(s.sha1);
  });
});
