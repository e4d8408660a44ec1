/**
 * A `concurrency` option is the route's own slot pool: two middlewares with their own prefixes
 * on one store never take each other's slots (a slow export once made search answer 429), and
 * middlewares that would share a pool without saying so are reported (FLOODGATE_SHARED_BUDGET),
 * as middlewares sharing rate budgets are.
 */
import { ConcurrencyLimiter, fixedWindow, RateLimiter, redisStore } from '@floodgate/core';
import { type HttpRateLimitConfig, parseHttpRateLimitOptions } from '@floodgate/core/http';
import { flushRedis, useTestRedis } from '../../../../test/harness/redis';

const redis = useTestRedis();

/** FLOODGATE_ warning codes given while `run` ran. */
function warningsDuring(run: () => void): string[] {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    run();
    return spy.mock.calls
      .map((call) => (call[1] as { code?: string } | undefined)?.code ?? '')
      .filter((code) => code.startsWith('FLOODGATE_'));
  } finally {
    spy.mockRestore();
  }
}

const middleware = (options: Record<string, unknown>): HttpRateLimitConfig<unknown> =>
  parseHttpRateLimitOptions(options, 'rateLimit');

/** Takes a slot of `config`'s concurrency pool for `key`: allowed or not. */
async function take(config: HttpRateLimitConfig<unknown>, key: string): Promise<boolean> {
  const decision = await config.concurrency!.acquire(key);
  return decision.allowed;
}

describe('concurrency slots per route', () => {
  beforeEach(() => flushRedis(redis()));

  it('routes with their own prefixes keep their own slots on one store', async () => {
    const store = redisStore({ client: redis() });
    const policies = fixedWindow({ limit: 100, window: '1m' });
    const exportRoute = middleware({
      store,
      policies,
      prefix: 'export',
      concurrency: { limit: 1 },
    });
    const searchRoute = middleware({
      store,
      policies,
      prefix: 'search',
      concurrency: { limit: 1 },
    });
    expect(await take(exportRoute, '203.0.113.7')).toBe(true);
    // The slow export holds its slot; search has its own.
    expect(await take(searchRoute, '203.0.113.7')).toBe(true);
    expect(await take(searchRoute, '203.0.113.7')).toBe(false);
    expect(await take(exportRoute, '203.0.113.7')).toBe(false);
  });

  it('a middleware given a limiter keeps its slots under that limiter’s prefix', async () => {
    const store = redisStore({ client: redis() });
    const limiter = (prefix: string) =>
      new RateLimiter({ store, prefix, policies: fixedWindow({ limit: 9, window: '1m' }) });
    const a = middleware({ limiter: limiter('a'), concurrency: { limit: 1 } });
    const b = middleware({ limiter: limiter('b'), concurrency: { limit: 1 } });
    expect(await take(a, 'k')).toBe(true);
    expect(await take(b, 'k')).toBe(true);
  });

  it('different limits on one prefix are different pools', async () => {
    const store = redisStore({ client: redis() });
    const one = middleware({ store, concurrency: { limit: 1 }, validate: false });
    const two = middleware({ store, concurrency: { limit: 2 }, validate: false });
    expect(await take(one, 'k')).toBe(true);
    expect(await take(two, 'k')).toBe(true);
    expect(await take(two, 'k')).toBe(true);
    expect(await take(one, 'k')).toBe(false);
  });

  it('one ConcurrencyLimiter passed to two middlewares is one pool, on purpose and unreported', async () => {
    const store = redisStore({ client: redis() });
    const shared = new ConcurrencyLimiter({ store, limit: 1, leaseTtl: '1m' });
    let a!: HttpRateLimitConfig<unknown>;
    let b!: HttpRateLimitConfig<unknown>;
    const codes = warningsDuring(() => {
      a = middleware({ store, prefix: 'a', concurrency: shared });
      b = middleware({ store, prefix: 'b', concurrency: shared });
    });
    expect(codes).toEqual([]);
    expect(await take(a, 'k')).toBe(true);
    expect(await take(b, 'k')).toBe(false);
  });

  it('FLOODGATE_SHARED_BUDGET: two middlewares whose slots share a pool, once', async () => {
    const store = redisStore({ client: redis() });
    const codes = warningsDuring(() => {
      middleware({ store, concurrency: { limit: 1 } });
      middleware({ store, concurrency: { limit: 1 } });
      middleware({ store, concurrency: { limit: 1 } });
    });
    expect(codes).toEqual(['FLOODGATE_SHARED_BUDGET']);
  });

  it('FLOODGATE_SHARED_BUDGET: two ConcurrencyLimiters on one prefix, different limits', () => {
    const store = redisStore({ client: redis() });
    const codes = warningsDuring(() => {
      middleware({
        concurrency: new ConcurrencyLimiter({ store, limit: 1, leaseTtl: '1m', prefix: 'x' }),
      });
      middleware({
        concurrency: new ConcurrencyLimiter({ store, limit: 5, leaseTtl: '1m', prefix: 'x' }),
      });
    });
    expect(codes).toEqual(['FLOODGATE_SHARED_BUDGET']);
  });

  it('no warning for pools on their own prefixes, or on different Redis clients', () => {
    const other = redis().duplicate();
    try {
      const codes = warningsDuring(() => {
        const store = redisStore({ client: redis() });
        middleware({ store, prefix: 'p', concurrency: { limit: 1 } });
        middleware({ store, prefix: 'q', concurrency: { limit: 1 } });
        middleware({ store: redisStore({ client: other }), concurrency: { limit: 1 } });
        middleware({ store: redisStore({ client: redis() }), concurrency: { limit: 1 } });
      });
      expect(codes).toEqual([]);
    } finally {
      other.disconnect();
    }
  });
});
