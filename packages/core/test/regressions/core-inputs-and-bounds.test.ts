/**
 * Core defects, each reproduced as it was found: options read through a
 * polluted prototype, a cold factor that never returned, lone surrogates that shared one Redis
 * key, a clock answering NaN, slidingLog limits that blocked Redis, a full memory store losing a
 * policy's write, and denied-cache entries without a byte bound or a maximum age.
 */
import { useTestRedis } from '../../../../test/harness/redis';
import { MAX_SLIDING_LOG_LIMIT } from '../../src/algorithms/sliding-log';
import {
  ConcurrencyLimiter,
  fixedWindow,
  gcra,
  memoryStore,
  RateLimitArgumentError,
  RateLimiter,
  redisStore,
  type Store,
  slidingLog,
  smoothWarmingUp,
  tokenBucket,
} from '../../src/index';
import { configErrorOf } from '../config-error';
import { fakeClock, T0 } from '../conformance/table';

const testRedis = useTestRedis();

const stores: Array<[string, (clock?: () => number) => Store]> = [
  ['memory', (clock) => memoryStore(clock ? { clock } : {})],
  ['redis', (clock) => redisStore({ client: testRedis(), ...(clock ? { clock } : {}) })],
];

/** Sets `name` on Object.prototype for the duration of `body`. */
async function withPollutedPrototype<T>(
  values: Record<string, unknown>,
  body: () => Promise<T> | T,
): Promise<T> {
  const proto = Object.prototype as Record<string, unknown>;
  for (const [name, value] of Object.entries(values)) {
    Object.defineProperty(proto, name, { value, configurable: true, writable: true });
  }
  try {
    return await body();
  } finally {
    for (const name of Object.keys(values)) delete proto[name];
  }
}

describe('options are read from own properties only (a polluted Object.prototype changes nothing)', () => {
  test('a polluted burst does not change a policy', async () => {
    const clean = tokenBucket({ limit: 5, window: '1s' });
    const polluted = await withPollutedPrototype({ burst: 1e9 }, () =>
      tokenBucket({ limit: 5, window: '1s' }),
    );
    expect(polluted.capacity).toBe(5);
    expect(polluted.id).toBe(clean.id);
    const g = await withPollutedPrototype({ burst: 1e6, name: 'evil' }, () =>
      gcra({ limit: 5, window: '1s' }),
    );
    expect([g.capacity, g.name]).toEqual([5, 'gcra-5-per-1s']);
  });

  test('a polluted failure option or hook is not picked up', async () => {
    let called = 0;
    const limiter = await withPollutedPrototype(
      { onStoreError: 'closed', timeout: 'soon', onDecision: () => called++ },
      () =>
        new RateLimiter({
          store: memoryStore(),
          policies: fixedWindow({ limit: 1, window: '1m' }),
          hooks: {},
        }),
    );
    await limiter.consume('k');
    expect(called).toBe(0);
  });

  test.each(stores)(
    'a polluted cost does not make consume, peek or acquire free (%s)',
    async (_n, makeStore) => {
      const limiter = new RateLimiter({
        store: makeStore(),
        policies: fixedWindow({ limit: 2, window: '1m' }),
      });
      const ds = await withPollutedPrototype({ cost: 0, maxWait: 1 }, async () => [
        await limiter.consume('k', {}),
        await limiter.acquire('k', {}),
        await limiter.peek('k', {}),
        await limiter.consume('k', {}),
      ]);
      expect(ds.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 1],
        [true, 0],
        [false, 0],
        [false, 0],
      ]);
    },
  );
});

describe('call options: unknown names are errors at every call', () => {
  const limiter = () =>
    new RateLimiter({ store: memoryStore(), policies: fixedWindow({ limit: 5, window: '1m' }) });

  test.each([
    ['consume', (l: RateLimiter) => l.consume('k', { kost: 2 } as never)],
    ['peek', (l: RateLimiter) => l.peek('k', { kost: 2 } as never)],
    ['acquire', (l: RateLimiter) => l.acquire('k', { maxQueueSize: 3 } as never)],
  ])('%s', async (_what, call) => {
    const error = await call(limiter()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RateLimitArgumentError);
    expect((error as Error).message).toMatch(/kost|maxQueueSize/);
  });

  test('ConcurrencyLimiter.acquire', async () => {
    const limiter = new ConcurrencyLimiter({ store: memoryStore(), limit: 1, leaseTtl: '1s' });
    const error = await limiter.acquire('k', { maxQueueSize: 3 } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RateLimitArgumentError);
    expect((error as Error).message).toContain('maxQueueSize');
  });
});

describe('smoothWarmingUp coldFactor', () => {
  test('1e307 is refused at once, naming the field (it never returned)', () => {
    const error = configErrorOf(() =>
      smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s', coldFactor: 1e307 }),
    );
    expect(error.field).toBe('smoothWarmingUp.coldFactor');
    expect(error.message).toContain('1000000');
  });
});

describe('keys with lone UTF-16 surrogates', () => {
  // Four keys that UTF-8 encoding (Redis, SHA-256) turns into the same bytes.
  const lone = ['a\uD800', 'a\uD801', 'a\uDC00', 'a\uDFFF'];

  test.each(stores)('are refused with a typed argument error on %s', async (_n, makeStore) => {
    const limiter = new RateLimiter({
      store: makeStore(),
      policies: fixedWindow({ limit: 1, window: '1m' }),
    });
    for (const key of [...lone, `${'x'.repeat(300)}\uD800`]) {
      const error = await limiter.consume(key).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RateLimitArgumentError);
      expect((error as RateLimitArgumentError).argument).toBe('key');
    }
    // A well-formed pair (an emoji) is a key like any other, on both stores.
    expect((await limiter.consume('a\uD83D\uDEA6')).allowed).toBe(true);
    expect((await limiter.consume('a\uD83D\uDEA6')).allowed).toBe(false);
  });
});

describe('an injected clock is validated at construction', () => {
  test.each([
    ['memoryStore', (clock: () => number) => memoryStore({ clock }), 'memoryStore.clock'],
    [
      'redisStore',
      (clock: () => number) => redisStore({ client: testRedis(), clock }),
      'redisStore.clock',
    ],
  ])('%s', (_what, make, field) => {
    for (const clock of [() => Number.NaN, () => -1, () => 'now' as never, () => Infinity]) {
      const error = configErrorOf(() => make(clock));
      expect(error.field).toBe(field);
    }
    const throwing = configErrorOf(() =>
      make(() => {
        throw new Error('no time');
      }),
    );
    expect(throwing.message).toContain('no time');
    expect(() => make(() => T0)).not.toThrow();
  });
});

describe('slidingLog is bounded', () => {
  test('a limit above the cap is refused, naming the alternatives', () => {
    const error = configErrorOf(() => slidingLog({ limit: 1e7, window: '1m' }));
    expect(error.field).toBe('slidingLog.limit');
    expect(error.message).toMatch(/slidingWindow/);
    expect(error.message).toMatch(/gcra|tokenBucket/);
    expect(() => slidingLog({ limit: MAX_SLIDING_LOG_LIMIT, window: '1m' })).not.toThrow();
  });

  test.each(stores)(
    'a cost far above the limit is denied without work (%s)',
    async (_n, makeStore) => {
      const limiter = new RateLimiter({
        store: makeStore(),
        policies: slidingLog({ limit: MAX_SLIDING_LOG_LIMIT, window: '1m' }),
      });
      const d = await limiter.consume('k', { cost: 2e8 });
      expect([d.allowed, d.retryAfter]).toEqual([false, -1]);
      const full = await limiter.consume('k', { cost: MAX_SLIDING_LOG_LIMIT });
      expect([full.allowed, full.remaining]).toEqual([true, 0]);
    },
  );
});

describe('a multi-policy decision on a full memory store', () => {
  test("never loses one policy's write to the sweep that makes room", async () => {
    const time = fakeClock();
    const store = memoryStore({ clock: time.clock, maxKeys: 3 });
    const short = fixedWindow({ limit: 1, window: '1s' });
    const long = fixedWindow({ limit: 5, window: '1h' });
    // The table holds k's short-window key, an idle key and a live one: full.
    await new RateLimiter({ store, policies: short }).consume('k');
    await new RateLimiter({ store, policies: short }).consume('idle');
    await new RateLimiter({ store, policies: long }).consume('live');
    time.now = T0 + 1500;
    const both = new RateLimiter({ store, policies: [short, long] });
    // k's short-window entry has expired and is reused; its long-window key needs a new slot.
    expect((await both.consume('k')).allowed).toBe(true);
    // The short window admitted 1 of 1 in this window: the next request must be denied.
    const next = await both.consume('k');
    expect([next.allowed, next.policy]).toEqual([false, short.name]);
  });
});

describe('the denied cache', () => {
  test('holds no denial longer than maxAge (default 1 s): a reset elsewhere is seen', async () => {
    const time = fakeClock();
    const client = testRedis();
    const policies = fixedWindow({ limit: 1, window: '1h' });
    const cached = new RateLimiter({
      store: redisStore({ client, clock: time.clock }),
      policies,
      deniedCache: { clock: time.clock },
    });
    const elsewhere = new RateLimiter({
      store: redisStore({ client, clock: time.clock }),
      policies,
    });
    await cached.consume('k');
    expect((await cached.consume('k')).retryAfter).toBeGreaterThan(60_000);
    await elsewhere.reset('k');
    time.now += 999;
    expect((await cached.consume('k')).allowed).toBe(false);
    time.now += 1;
    expect((await cached.consume('k')).allowed).toBe(true);
  });

  test('maxAge is configurable and validated', () => {
    const base = { store: memoryStore(), policies: fixedWindow({ limit: 1, window: '1m' }) };
    expect(new RateLimiter({ ...base, deniedCache: { maxAge: '250ms' } }).deniedCache?.maxAge).toBe(
      250,
    );
    expect(
      configErrorOf(() => new RateLimiter({ ...base, deniedCache: { maxAge: 0 } })).field,
    ).toBe('RateLimiter.deniedCache.maxAge');
  });

  test('is bounded by bytes: 2 000 denied keys of 16 KB stay within maxBytes', async () => {
    const limiter = new RateLimiter({
      store: memoryStore(),
      policies: fixedWindow({ limit: 1, window: '1h' }),
      deniedCache: { maxBytes: 1024 * 1024 },
    });
    for (let i = 0; i < 2000; i++) {
      const key = `${i}:${'x'.repeat(16 * 1024)}`;
      await limiter.consume(key);
      await limiter.consume(key);
    }
    const cache = limiter.deniedCache!;
    expect(cache.bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(cache.size).toBeGreaterThan(0);
    expect(cache.size * 32 * 1024).toBeLessThanOrEqual(1024 * 1024);
  });

  test('a Map is not an options object', () => {
    const error = configErrorOf(
      () =>
        new RateLimiter({
          store: memoryStore(),
          policies: fixedWindow({ limit: 1, window: '1m' }),
          deniedCache: new Map() as never,
        }),
    );
    expect(error.field).toBe('RateLimiter.deniedCache');
  });
});

describe('the key memo', () => {
  test('is bounded by bytes as well as keys', async () => {
    const limiter = new RateLimiter({
      store: memoryStore(),
      policies: fixedWindow({ limit: 1, window: '1h' }),
    });
    for (let i = 0; i < 2000; i++) await limiter.consume(`${i}:${'x'.repeat(16 * 1024)}`);
    const memo = (limiter as unknown as { keyMemo: Map<string, unknown> }).keyMemo;
    let bytes = 0;
    for (const key of memo.keys()) bytes += key.length * 2;
    expect(bytes).toBeLessThanOrEqual(8 * 1024 * 1024);
  });
});

describe('gcra rates finer than the microsecond grid', () => {
  test('a limit whose interval rounding would cut the rate is refused, naming the way out', () => {
    const error = configErrorOf(() => gcra({ limit: 1e7, window: '1s' }));
    expect(error.field).toBe('gcra.limit');
    expect(error.message).toContain('tokenBucket');
    expect(error.message).toContain('10000');
    // 1.5 µs rounded to 2 µs would be 25 % slower: refused too.
    expect(configErrorOf(() => gcra({ limit: 2000, window: '3ms' })).field).toBe('gcra.limit');
    // Exact, or within 1 %: accepted.
    expect(gcra({ limit: 1e6, window: '1s' }).params).toEqual([1, 1e6]);
    expect(gcra({ limit: 3, window: '1s' }).params).toEqual([333_334, 3]);
  });
});
