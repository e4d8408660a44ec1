/**
 * Live limits through the limiter: the option, the arguments (validated as strictly as policy
 * options), what a change is seen by (another limiter on the same store, with its own
 * connection, at its very next decision), no denied cache, the keys written. The carry modes'
 * answers are in the conformance table (src/testing/scenarios/live-limits.ts).
 */
import { configErrorOf } from '@floodgate/http-test-kit';
import { Redis } from 'ioredis';
import { connectIoredis, useTestRedis } from '../../../../test/harness/redis';
import {
  fixedWindow,
  gcra,
  memoryStore,
  RateLimitArgumentError,
  RateLimiter,
  redisStore,
  type Store,
  slidingWindow,
  smoothBursty,
} from '../../src/index';

const testRedis = useTestRedis();

let prefixes = 0;
const policies = (second: '1s' | '1m' = '1s') => [
  fixedWindow({ limit: 5, window: second, name: 'second' }),
  gcra({ limit: 100, window: '1h', name: 'hour' }),
];

const stores: Array<[string, () => Store]> = [
  ['memory', () => memoryStore()],
  ['redis', () => redisStore({ client: testRedis() })],
];

describe.each(stores)('live limits on the %s store', (_name, makeStore) => {
  const limiter = (store = makeStore(), prefix = `live${prefixes++}`, second?: '1s' | '1m') =>
    new RateLimiter({ store, policies: policies(second), prefix, liveLimits: true });

  it('getLimit answers the effective parameters per policy, before and after setLimit', async () => {
    const l = limiter();
    expect(await l.getLimit('k')).toEqual({
      second: { limit: 5, window: 1000, capacity: 5, overridden: false },
      hour: { limit: 100, window: 3_600_000, burst: 100, capacity: 100, overridden: false },
    });
    await l.setLimit('k', { policy: 'hour', limit: 500, window: '1d', burst: 50 });
    expect((await l.getLimit('k')).hour).toEqual({
      limit: 500,
      window: 86_400_000,
      burst: 50,
      capacity: 50,
      overridden: true,
    });
    expect((await l.getLimit('other')).hour?.overridden).toBe(false);
    await l.clearLimit('k');
    expect((await l.getLimit('k')).hour?.overridden).toBe(false);
  });

  it('a ttl shows as expiresAt', async () => {
    const l = limiter();
    const before = Date.now();
    await l.setLimit('k', { policy: 'second', limit: 1 }, { ttl: '1h' });
    const { expiresAt } = (await l.getLimit('k')).second!;
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);
  });

  it('another limiter (its own connection) decides with the override at its next call', async () => {
    const prefix = `live${prefixes++}`;
    const own = connectIoredis();
    try {
      const store = makeStore();
      const other = store.kind === 'redis' ? redisStore({ client: own as Redis }) : store;
      // A window of a minute: a loaded machine may take a second between these calls.
      const a = limiter(store, prefix, '1m');
      const b = limiter(other, prefix, '1m');
      for (let i = 0; i < 5; i++) expect((await b.consume('k')).allowed).toBe(true);
      expect((await b.consume('k')).allowed).toBe(false);
      await a.setLimit('k', { policy: 'second', limit: 8 }, { carry: 'additive' });
      const d = await b.consume('k');
      expect(d).toMatchObject({ allowed: true });
      expect(d.policies[0]).toMatchObject({ name: 'second', limit: 8, remaining: 2 });
      await a.setLimit('k', { policy: 'second', limit: 1 }, { carry: 'additive' });
      expect((await b.consume('k')).policies[0]).toMatchObject({ allowed: false, limit: 1 });
    } finally {
      own.disconnect();
    }
  });

  it('keeps no denied cache: a denial never answers after a change', async () => {
    const store = makeStore();
    const prefix = `live${prefixes++}`;
    const cached = new RateLimiter({
      store,
      policies: policies(),
      prefix,
      liveLimits: true,
      deniedCache: true,
    });
    expect(cached.deniedCache).toBeUndefined();
    for (let i = 0; i < 5; i++) await cached.consume('k');
    expect((await cached.consume('k')).allowed).toBe(false);
    await limiter(store, prefix).setLimit(
      'k',
      { policy: 'second', limit: 6 },
      { carry: 'additive' },
    );
    expect((await cached.consume('k')).allowed).toBe(true);
  });

  it('refuses bad overrides with a coded error naming the field, and writes nothing', async () => {
    const l = limiter();
    const cases: Array<[unknown, unknown, string, string]> = [
      [{ policy: 'minute', limit: 1 }, undefined, 'FLOODGATE_INVALID_OPTION', 'setLimit.policy'],
      [{ policy: 'second' }, undefined, 'FLOODGATE_MISSING_OPTION', 'setLimit.limit'],
      [{ policy: 'second', limit: -1 }, undefined, 'FLOODGATE_INVALID_OPTION', 'setLimit.limit'],
      [{ policy: 'second', limit: 1.5 }, undefined, 'FLOODGATE_INVALID_OPTION', 'setLimit.limit'],
      [
        { policy: 'second', limit: 2, window: 'soon' },
        undefined,
        'FLOODGATE_INVALID_OPTION',
        'setLimit.window',
      ],
      [
        { policy: 'second', limit: 2, burst: 3 },
        undefined,
        'FLOODGATE_INVALID_OPTION',
        'setLimit.burst',
      ],
      [
        { policy: 'hour', limit: 2, burst: 0 },
        undefined,
        'FLOODGATE_INVALID_OPTION',
        'setLimit.burst',
      ],
      [
        { policy: 'second', limit: 2, max: 3 },
        undefined,
        'FLOODGATE_UNKNOWN_OPTION',
        'setLimit.max',
      ],
      [
        { policy: 'second', limit: 2 },
        { carry: 'keep' },
        'FLOODGATE_INVALID_OPTION',
        'setLimit.options.carry',
      ],
      [
        { policy: 'second', limit: 2 },
        { ttl: -5 },
        'FLOODGATE_INVALID_OPTION',
        'setLimit.options.ttl',
      ],
      [
        { policy: 'second', limit: 2 },
        { ttl: '1h', when: 1 },
        'FLOODGATE_UNKNOWN_OPTION',
        'setLimit.options.when',
      ],
      [[], undefined, 'FLOODGATE_INVALID_OPTION', 'setLimit.override'],
    ];
    for (const [override, options, code, field] of cases) {
      const error = await l.setLimit('k', override as never, options as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ name: 'RateLimitConfigError', code, field });
      expect((error as Error).message).toContain(field);
    }
    expect((await l.getLimit('k')).second?.overridden).toBe(false);
    await expect(l.setLimit('', { policy: 'second', limit: 1 })).rejects.toBeInstanceOf(
      RateLimitArgumentError,
    );
  });

  it("refuses a carry it cannot define: smooth policies take only 'reset'", async () => {
    const l = new RateLimiter({
      store: makeStore(),
      policies: [smoothBursty({ limit: 10, window: '1s', name: 's' })],
      prefix: `live${prefixes++}`,
      liveLimits: true,
    });
    const error = await l.setLimit('k', { policy: 's', limit: 20 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: 'setLimit.options.carry',
    });
    expect((error as Error).message).toContain("'reset'");
    await l.setLimit('k', { policy: 's', limit: 20 }, { carry: 'reset' });
    expect((await l.consume('k')).limit).toBe(20);
    await expect(l.clearLimit('k')).rejects.toMatchObject({ field: 'clearLimit.options.carry' });
  });

  it('a limiter without liveLimits refuses setLimit and clearLimit, and getLimit shows its own', async () => {
    const l = new RateLimiter({
      store: makeStore(),
      policies: policies(),
      prefix: `live${prefixes++}`,
    });
    await expect(l.setLimit('k', { policy: 'second', limit: 1 })).rejects.toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: 'RateLimiter.liveLimits',
    });
    await expect(l.clearLimit('k')).rejects.toMatchObject({ field: 'RateLimiter.liveLimits' });
    expect((await l.getLimit('k')).second).toMatchObject({ limit: 5, overridden: false });
  });

  it('sliding policies carry too (a window change included)', async () => {
    const l = new RateLimiter({
      store: makeStore(),
      policies: [slidingWindow({ limit: 10, window: '1m', name: 'w' })],
      prefix: `live${prefixes++}`,
      liveLimits: true,
    });
    for (let i = 0; i < 4; i++) await l.consume('k');
    await l.setLimit('k', { policy: 'w', limit: 20, window: '2m' }, { carry: 'additive' });
    const d = await l.peek('k', { cost: 0 });
    expect(d).toMatchObject({ limit: 20, remaining: 16, window: 120_000 });
  });
});

it('the option is validated: liveLimits must be a boolean', () => {
  const error = configErrorOf(
    () =>
      new RateLimiter({ store: memoryStore(), policies: policies(), liveLimits: 'yes' as never }),
  );
  expect(error).toMatchObject({
    code: 'FLOODGATE_INVALID_OPTION',
    field: 'RateLimiter.liveLimits',
  });
});

it('on Redis, a key with an override holds it beside its state, in its hash tag, without a TTL unless asked', async () => {
  const client = testRedis();
  const l = new RateLimiter({
    store: redisStore({ client }),
    policies: policies(),
    prefix: 'tags',
    liveLimits: true,
  });
  await l.consume('alice');
  await l.setLimit('alice', { policy: 'hour', limit: 10 });
  const keys = (await client.keys('tags:*')).sort();
  const limits = keys.filter((k) => /:lm[\w-]{8}$/.test(k));
  expect(limits).toHaveLength(1);
  expect(limits[0]).toMatch(/^tags:\{alice\}:lm/);
  expect(await client.pttl(limits[0]!)).toBe(-1);
  await l.setLimit('alice', { policy: 'second', limit: 10 }, { ttl: '10s' });
  const pttl = await client.pttl(limits[0]!);
  expect(pttl).toBeGreaterThan(10_000);
  expect(pttl).toBeLessThan(10_000 + 2 * 3_600_000 + 2000);
  // Both overrides are kept: the second replaced only its own policy's.
  expect((await l.getLimit('alice')).hour).toMatchObject({ limit: 10, overridden: true });
});
