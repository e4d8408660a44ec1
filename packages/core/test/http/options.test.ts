import {
  ConcurrencyLimiter,
  fixedWindow,
  memoryStore,
  RateLimiter,
  redisStore,
} from '@floodgate/core';
import {
  checkHttpRequest,
  DEFAULT_FALLBACK_KEY,
  type HttpRequestView,
  parseHttpRateLimitOptions,
  parseKeyOptions,
  resolveCost,
  resolveKey,
} from '@floodgate/core/http';
import { useTestRedis } from '../../../../test/harness/redis';

type Req = { id?: string; headers?: Record<string, string> };

const view = (over: Partial<HttpRequestView> = {}): HttpRequestView => ({
  ip: '203.0.113.7',
  headers: {},
  query: {},
  user: undefined,
  trustProxy: false,
  ...over,
});

const policies = fixedWindow({ limit: 2, window: '1m' });

describe('resolveKey', () => {
  // Diagnostics are tested through real servers (diagnostics.test.ts); quiet here.
  const keys = (o: Record<string, unknown>) =>
    parseKeyOptions<Req>({ validate: false, ...o }, 'rateLimit');

  it('defaults to the normalised IP', async () => {
    expect(await resolveKey(keys({}), view({ ip: '::ffff:10.0.0.1' }), {})).toBe('ip:10.0.0.1');
    expect(await resolveKey(keys({}), view({ ip: '2001:db8::1' }), {})).toBe('ip:2001:db8::/56');
    expect(await resolveKey(keys({ ipv6Subnet: 64 }), view({ ip: '2001:db8::1' }), {})).toBe(
      'ip:2001:db8::/64',
    );
  });

  it('appKey reads the header, then the query parameter', async () => {
    const k = keys({ key: 'appKey' });
    expect(await resolveKey(k, view({ headers: { 'x-app-key': 'APIX' } }), {})).toBe('app:APIX');
    expect(await resolveKey(k, view({ query: { appKey: 'Q1' } }), {})).toBe('app:Q1');
    const custom = keys({ key: 'appKey', appKeyHeader: 'X-Device-Key', appKeyQuery: false });
    expect(await resolveKey(custom, view({ headers: { 'x-device-key': 'D' } }), {})).toBe('app:D');
    expect(await resolveKey(custom, view({ query: { appKey: 'Q1' } }), {})).toBe(
      DEFAULT_FALLBACK_KEY,
    );
  });

  it('clientId reads user.id, user.clientId or a getter', async () => {
    const k = keys({ key: 'clientId' });
    expect(await resolveKey(k, view({ user: { id: 42 } }), {})).toBe('client:42');
    expect(await resolveKey(k, view({ user: { clientId: 'c-1' } }), {})).toBe('client:c-1');
    const getter = keys({ key: 'clientId', clientId: (req: Req) => req.id });
    expect(await resolveKey(getter, view(), { id: 'from-getter' })).toBe('client:from-getter');
  });

  it('an array is tried in order, then the documented fallback', async () => {
    const k = keys({
      key: ['clientId', 'appKey', 'ip'],
      verifyAppKey: (appKey: string) => appKey === 'A',
    });
    expect(await resolveKey(k, view({ user: { id: 'u' } }), {})).toBe('client:u');
    expect(await resolveKey(k, view({ headers: { 'x-app-key': 'A' } }), {})).toBe('app:A');
    expect(await resolveKey(k, view(), {})).toBe('ip:203.0.113.7');
    expect(await resolveKey(k, view({ ip: undefined }), {})).toBe('fallback:unidentified');
    const custom = keys({ key: 'appKey', fallbackKey: 'anonymous' });
    expect(await resolveKey(custom, view(), {})).toBe('anonymous');
  });

  it('a key function may be async and may answer undefined', async () => {
    const k = keys({ key: [async (req: Req) => req.id, 'ip'] });
    expect(await resolveKey(k, view(), { id: 'tenant-1' })).toBe('tenant-1');
    expect(await resolveKey(k, view(), {})).toBe('ip:203.0.113.7');
  });

  it('a throwing key function propagates its error', async () => {
    const boom = new Error('resolver broke');
    const k = keys({
      key: () => {
        throw boom;
      },
    });
    await expect(resolveKey(k, view(), {})).rejects.toBe(boom);
  });

  it('a key function returning a non-string is an argument error', async () => {
    const k = keys({ key: () => 42 as unknown as string });
    await expect(resolveKey(k, view(), {})).rejects.toMatchObject({
      name: 'RateLimitArgumentError',
      argument: 'key',
    });
  });

  it('warns once per process when X-Forwarded-For arrives and no proxy is trusted', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const k = parseKeyOptions<Req>({}, 'rateLimit');
      const forwarded = view({ headers: { 'x-forwarded-for': '198.51.100.1' } });
      await resolveKey(k, view(), {});
      expect(warn).not.toHaveBeenCalled();
      await resolveKey(k, forwarded, {});
      await resolveKey(k, forwarded, {});
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]![1]).toMatchObject({ code: 'FLOODGATE_UNTRUSTED_PROXY' });
      await resolveKey(keys({}), { ...forwarded, trustProxy: true }, {});
      // Another middleware: still once per process.
      await resolveKey(parseKeyOptions<Req>({}, 'rateLimit'), forwarded, {});
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
    }
  });

  it.each([
    [{ key: 'session' }, 'rateLimit.key'],
    [{ key: ['ip', 7] }, 'rateLimit.key[1]'],
    [{ key: [] }, 'rateLimit.key'],
    [{ ipv6Subnet: 80 }, 'rateLimit.ipv6Subnet'],
    [{ ipv6Subnet: 31 }, 'rateLimit.ipv6Subnet'],
    [{ appKeyHeader: '' }, 'rateLimit.appKeyHeader'],
    [{ clientId: 'id' }, 'rateLimit.clientId'],
    [{ fallbackKey: 3 }, 'rateLimit.fallbackKey'],
  ])('rejects %p', (options, field) => {
    expect(() => keys(options)).toThrow(
      expect.objectContaining({ name: 'RateLimitConfigError', field }),
    );
  });
});

describe('parseHttpRateLimitOptions', () => {
  it('builds a limiter on the memory store by default', async () => {
    const config = parseHttpRateLimitOptions<Req>({ policies }, 'rateLimit');
    expect(config.limiter!.store.kind).toBe('memory');
    expect(config.headers).toEqual({ standard: 'draft-10', legacy: false, retryAfter: true });
    expect(config.cost).toBe(1);
  });

  it('passes limiter options (prefix) through', () => {
    const config = parseHttpRateLimitOptions<Req>({ policies, prefix: 'api' }, 'rateLimit');
    expect(config.limiter!.prefix).toBe('api');
  });

  it('takes a ready limiter', () => {
    const limiter = new RateLimiter({ store: memoryStore(), policies });
    expect(parseHttpRateLimitOptions<Req>({ limiter }, 'rateLimit').limiter).toBe(limiter);
  });

  it('rejects unknown option names under the adapter name', () => {
    expect(() => parseHttpRateLimitOptions({ policies, windowMs: 1000 }, 'rateLimit')).toThrow(
      expect.objectContaining({
        name: 'RateLimitConfigError',
        code: 'FLOODGATE_UNKNOWN_OPTION',
        field: 'rateLimit.windowMs',
      }),
    );
  });

  it('rejects a limiter mixed with limiter options', () => {
    const limiter = new RateLimiter({ store: memoryStore(), policies });
    expect(() => parseHttpRateLimitOptions({ limiter, policies }, 'rateLimit')).toThrow(
      expect.objectContaining({ field: 'rateLimit.policies' }),
    );
    expect(() => parseHttpRateLimitOptions({ limiter: {} }, 'rateLimit')).toThrow(
      expect.objectContaining({ field: 'rateLimit.limiter' }),
    );
  });

  it.each([
    [{}, 'rateLimit.policies'],
    [{ policies, cost: -1 }, 'rateLimit.cost'],
    [{ policies, cost: 1.5 }, 'rateLimit.cost'],
    [{ policies, skip: true }, 'rateLimit.skip'],
    [{ policies, onLimited: 'x' }, 'rateLimit.onLimited'],
    [{ policies, headers: 'draft-10' }, 'rateLimit.headers'],
    [{ policies, store: {} }, 'rateLimit.store'],
  ])('rejects %p naming %s', (options, field) => {
    expect(() => parseHttpRateLimitOptions(options, 'rateLimit')).toThrow(
      expect.objectContaining({ name: 'RateLimitConfigError', field }),
    );
  });

  it('concurrency: options build a ConcurrencyLimiter on the same store; alone it needs no policies', () => {
    const store = memoryStore();
    const both = parseHttpRateLimitOptions<Req>(
      { store, policies, concurrency: { limit: 3 } },
      'rateLimit',
    );
    expect(both.concurrency).toMatchObject({ limit: 3, leaseTtl: 60_000 });
    expect(both.concurrency!.store).toBe(store);
    const alone = parseHttpRateLimitOptions<Req>(
      { concurrency: { limit: 2, leaseTtl: '5s' } },
      'rateLimit',
    );
    expect(alone.limiter).toBeUndefined();
    expect(alone.concurrency).toMatchObject({ limit: 2, leaseTtl: 5000 });
    const ready = new ConcurrencyLimiter({ store, limit: 1, leaseTtl: '1s' });
    expect(parseHttpRateLimitOptions<Req>({ concurrency: ready }, 'rateLimit').concurrency).toBe(
      ready,
    );
  });

  it.each([
    [{ concurrency: { limit: 0 } }, 'rateLimit.concurrency.limit'],
    [{ concurrency: { limit: 2, leaseTtl: -1 } }, 'rateLimit.concurrency.leaseTtl'],
    [{ concurrency: { limit: 2, max: 3 } }, 'rateLimit.concurrency.max'],
    [{ concurrency: 5 }, 'rateLimit.concurrency'],
    [{ concurrency: { limit: 2 }, prefix: 'x' }, 'rateLimit.prefix'],
  ])('rejects concurrency %p naming %s', (options, field) => {
    expect(() => parseHttpRateLimitOptions(options, 'rateLimit')).toThrow(
      expect.objectContaining({ name: 'RateLimitConfigError', field }),
    );
  });

  it('rejects a non-object', () => {
    expect(() => parseHttpRateLimitOptions(undefined, 'rateLimit')).toThrow(/rateLimit/);
  });
});

describe('resolveCost and checkHttpRequest', () => {
  it('a cost function must answer a non-negative integer', async () => {
    for (const bad of [-1, 0.5, Number.NaN, '2']) {
      const config = parseHttpRateLimitOptions<Req>({ policies, cost: () => bad }, 'rateLimit');
      await expect(resolveCost(config, {})).rejects.toMatchObject({
        name: 'RateLimitArgumentError',
        argument: 'cost',
      });
    }
    const ok = parseHttpRateLimitOptions<Req>({ policies, cost: async () => 2 }, 'rateLimit');
    expect(await resolveCost(ok, {})).toBe(2);
  });

  it('skips, keys, costs and consumes', async () => {
    const config = parseHttpRateLimitOptions<Req>(
      { policies, cost: 2, skip: (req: Req) => req.id === 'health' },
      'rateLimit',
    );
    expect(await checkHttpRequest(config, view(), { id: 'health' })).toBeUndefined();
    const first = await checkHttpRequest(config, view(), {});
    expect(first).toMatchObject({ key: 'ip:203.0.113.7', cost: 2 });
    expect(first!.decision).toMatchObject({ allowed: true, remaining: 0 });
    const second = await checkHttpRequest(config, view(), {});
    expect(second!.decision.allowed).toBe(false);
  });
});

describe('the local cache of denied keys in the adapters', () => {
  const testRedis = useTestRedis();
  const parse = (o: Record<string, unknown>) =>
    parseHttpRateLimitOptions<Req>({ policies, ...o }, 'rateLimit').limiter!;

  test('is on by default for a Redis store, and answers a repeated denial without Redis', async () => {
    const now = 1_700_000_000_000;
    const limiter = parse({ store: redisStore({ client: testRedis(), clock: () => now }) });
    expect(limiter.deniedCache).toBeDefined();
    for (let i = 0; i < 2; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    expect((await limiter.consume('k')).allowed).toBe(false);
    // Redis forgets the key; the cached denial still holds on the store's (frozen) clock.
    await testRedis().flushdb();
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  test('is off for the memory store (no round trip to save) and when turned off', () => {
    expect(parse({}).deniedCache).toBeUndefined();
    expect(parse({ store: memoryStore() }).deniedCache).toBeUndefined();
    expect(
      parse({ store: redisStore({ client: testRedis() }), deniedCache: false }).deniedCache,
    ).toBeUndefined();
  });
});
