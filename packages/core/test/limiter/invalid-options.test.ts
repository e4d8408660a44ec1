/** Bad options fail at construction with RateLimitConfigError naming the field and the value. */
import {
  fixedWindow,
  gcra,
  memoryStore,
  type Policy,
  RateLimiter,
  redisStore,
  slidingLog,
  tokenBucket,
} from '../../src/index';
import { configErrorOf } from '../config-error';

const factories = {
  fixedWindow: (o: unknown) => fixedWindow(o as never),
  slidingLog: (o: unknown) => slidingLog(o as never),
  tokenBucket: (o: unknown) => tokenBucket(o as never),
  gcra: (o: unknown) => gcra(o as never),
};

describe.each(Object.entries(factories))('%s options', (name, make) => {
  test.each([
    ['missing', undefined, 'FLOODGATE_MISSING_OPTION'],
    ['negative', -1, 'FLOODGATE_INVALID_OPTION'],
    ['very negative', -5, 'FLOODGATE_INVALID_OPTION'],
    ['fractional', 2.5, 'FLOODGATE_INVALID_OPTION'],
    ['a string', '10', 'FLOODGATE_INVALID_OPTION'],
    ['NaN', Number.NaN, 'FLOODGATE_INVALID_OPTION'],
  ])('limit %s', (_what, limit, code) => {
    const error = configErrorOf(() => make({ limit, window: '1s' }));
    expect(error).toMatchObject({ code, field: `${name}.limit`, value: limit });
    expect(error.message).toContain(`${name}.limit`);
    if (limit !== undefined) expect(error.message).toContain(String(limit));
  });

  test.each([
    ['unparseable', 'soon'],
    ['zero', '0s'],
    ['zero ms', 0],
    ['negative', -1000],
    ['below a microsecond', 0.0001],
    ['an unknown unit', '5 fortnights'],
    ['missing', undefined],
    ['longer than 1000 days', '1001d'],
  ])('window %s', (_what, window) => {
    const error = configErrorOf(() => make({ limit: 5, window }));
    expect(error.field).toBe(`${name}.window`);
    expect(error.value).toBe(window);
    expect(error.message).toContain(`${name}.window`);
  });

  test('unknown option names are reported, not ignored', () => {
    const error = configErrorOf(() => make({ limit: 5, window: '1s', limt: 3 }));
    expect(error).toMatchObject({
      code: 'FLOODGATE_UNKNOWN_OPTION',
      field: `${name}.limt`,
      value: 3,
    });
  });

  test('a name with spaces or separators is refused', () => {
    expect(configErrorOf(() => make({ limit: 5, window: '1s', name: 'a b' })).field).toBe(
      `${name}.name`,
    );
    expect(configErrorOf(() => make({ limit: 5, window: '1s', name: '' })).field).toBe(
      `${name}.name`,
    );
  });

  test('options must be an object', () => {
    expect(configErrorOf(() => make(undefined)).field).toBe(name);
    expect(configErrorOf(() => make(5)).field).toBe(name);
  });
});

describe.each([
  ['tokenBucket', factories.tokenBucket],
  ['gcra', factories.gcra],
])('%s burst', (name, make) => {
  test.each([0, -1, 1.5, '3'])('burst %p is refused', (burst) => {
    const error = configErrorOf(() => make({ limit: 5, window: '1s', burst }));
    expect(error).toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: `${name}.burst`,
      value: burst,
    });
  });

  test('burst so large the arithmetic would leave 2^53 is refused', () => {
    expect(configErrorOf(() => make({ limit: 1, window: '1000d', burst: 1e9 })).field).toBe(
      `${name}.burst`,
    );
  });
});

describe('durations', () => {
  test.each([
    ['250ms', 250],
    ['1s', 1000],
    ['1.5s', 1500],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['750us', 0.75],
    [1500, 1500],
    [0.5, 0.5],
  ])('%p is %p ms', (window, ms) => {
    expect(fixedWindow({ limit: 1, window: window as never }).window).toBe(ms);
  });

  test('derived names read like the policy', () => {
    expect(fixedWindow({ limit: 100, window: '1m' }).name).toBe('fixed-100-per-60s');
    expect(slidingLog({ limit: 5, window: 250 }).name).toBe('sliding-log-5-per-250ms');
    expect(tokenBucket({ limit: 10, window: '1s', burst: 20 }).name).toBe(
      'token-bucket-10-per-1s-burst-20',
    );
    expect(gcra({ limit: 10, window: '1s' }).name).toBe('gcra-10-per-1s');
  });

  test('ids follow parameters and explicit names', () => {
    const a = fixedWindow({ limit: 100, window: '1m' });
    expect(fixedWindow({ limit: 100, window: 60_000 }).id).toBe(a.id);
    // An explicit name is part of the identity: differently named policies never share state.
    const x = fixedWindow({ limit: 100, window: 60_000, name: 'x' });
    expect(x.id).not.toBe(a.id);
    expect(fixedWindow({ limit: 100, window: '1m', name: 'x' }).id).toBe(x.id);
    expect(fixedWindow({ limit: 100, window: '1m', name: 'y' }).id).not.toBe(x.id);
    expect(fixedWindow({ limit: 101, window: '1m' }).id).not.toBe(a.id);
    expect(fixedWindow({ limit: 100, window: '61s' }).id).not.toBe(a.id);
    expect(slidingLog({ limit: 100, window: '1m' }).id).not.toBe(a.id);
  });
});

describe('RateLimiter options', () => {
  const store = memoryStore();
  const policy = fixedWindow({ limit: 1, window: '1s' });

  test('no policies', () => {
    for (const policies of [[], undefined]) {
      const error = configErrorOf(() => new RateLimiter({ store, policies: policies as never }));
      expect(error).toMatchObject({ code: 'FLOODGATE_NO_POLICIES', field: 'RateLimiter.policies' });
    }
  });

  test('two policies with the same name', () => {
    const error = configErrorOf(
      () =>
        new RateLimiter({
          store,
          policies: [
            fixedWindow({ limit: 1, window: '1s', name: 'api' }),
            gcra({ limit: 5, window: '1s', name: 'api' }),
          ],
        }),
    );
    expect(error).toMatchObject({
      code: 'FLOODGATE_DUPLICATE_POLICY',
      field: 'RateLimiter.policies[1].name',
      value: 'api',
    });
    expect(error.message).toContain('"api"');
  });

  test('two policies with the same parameters and different names keep their own state', async () => {
    const limiter = new RateLimiter({
      store: memoryStore(),
      policies: [policy, fixedWindow({ limit: 1, window: 1000, name: 'other' })],
    });
    expect(limiter.policies[0]!.id).not.toBe(limiter.policies[1]!.id);
    const first = await limiter.consume('k');
    expect(first.policies.map((p) => p.remaining)).toEqual([0, 0]);
    expect((await limiter.consume('k')).allowed).toBe(false);
  });

  test('something that is not a policy', () => {
    const error = configErrorOf(
      () => new RateLimiter({ store, policies: [{ limit: 5 } as unknown as Policy] }),
    );
    expect(error.field).toBe('RateLimiter.policies[0]');
  });

  test('unknown option, missing or bad store, bad prefix', () => {
    expect(
      configErrorOf(() => new RateLimiter({ store, policies: policy, prefx: 'x' } as never)),
    ).toMatchObject({
      code: 'FLOODGATE_UNKNOWN_OPTION',
      field: 'RateLimiter.prefx',
    });
    expect(configErrorOf(() => new RateLimiter({ policies: policy } as never)).field).toBe(
      'RateLimiter.store',
    );
    expect(
      configErrorOf(() => new RateLimiter({ store: {} as never, policies: policy })).field,
    ).toBe('RateLimiter.store');
    for (const prefix of ['', 'a{b', 'a}b', 5]) {
      expect(
        configErrorOf(() => new RateLimiter({ store, policies: policy, prefix: prefix as never }))
          .field,
      ).toBe('RateLimiter.prefix');
    }
  });

  test('store options', () => {
    expect(configErrorOf(() => memoryStore({ maxKeys: 0 })).field).toBe('memoryStore.maxKeys');
    expect(configErrorOf(() => memoryStore({ clock: 5 as never })).field).toBe('memoryStore.clock');
    expect(configErrorOf(() => memoryStore({ ttl: 5 } as never)).code).toBe(
      'FLOODGATE_UNKNOWN_OPTION',
    );
    const unknownClient = configErrorOf(() => redisStore({ client: { get() {} } as never }));
    expect(unknownClient).toMatchObject({
      code: 'FLOODGATE_UNKNOWN_CLIENT',
      field: 'redisStore.client',
    });
    expect(unknownClient.message).toContain('ioredis');
    expect(
      configErrorOf(() => redisStore({ client: 'redis://localhost' as never })).message,
    ).toContain('"redis://localhost"');
  });
});

describe.each(Object.entries(factories))('%s blockDuration', (name, make) => {
  test.each([
    ['zero', 0, `${name}.blockDuration`],
    ['unparseable', 'a while', `${name}.blockDuration`],
    ['an unknown field', { initial: '1s', multiplyer: 2 }, `${name}.blockDuration.multiplyer`],
    ['no initial', { multiplier: 2 }, `${name}.blockDuration.initial`],
    [
      'a multiplier below 1',
      { initial: '1s', multiplier: 0.5 },
      `${name}.blockDuration.multiplier`,
    ],
    [
      'a multiplier with three decimals',
      { initial: '1s', multiplier: 1.125 },
      `${name}.blockDuration.multiplier`,
    ],
    ['max below initial', { initial: '1m', max: '1s' }, `${name}.blockDuration.max`],
    [
      'a negative forgetAfter',
      { initial: '1s', forgetAfter: -1 },
      `${name}.blockDuration.forgetAfter`,
    ],
  ])('%s', (_what, blockDuration, field) => {
    const error = configErrorOf(() => make({ limit: 5, window: '1s', blockDuration }));
    expect(error.field).toBe(field);
    expect(error.message).toContain(field);
  });

  test('a duration, or the progressive form with its defaults', () => {
    expect((make({ limit: 5, window: '1s', blockDuration: '15m' }) as Policy).lockout).toEqual({
      initial: 900_000_000,
      multiplier: 1,
      max: 900_000_000,
      forgetAfter: 0,
    });
    const progressive = make({
      limit: 5,
      window: '1s',
      blockDuration: { initial: '1s' },
    }) as Policy;
    expect(progressive.lockout).toEqual({
      initial: 1_000_000,
      multiplier: 2,
      max: 86_400_000_000,
      forgetAfter: 86_400_000_000,
    });
    // A lockout does not change what the policy stores: same id with or without it.
    expect(progressive.id).toBe((make({ limit: 5, window: '1s' }) as Policy).id);
  });
});
