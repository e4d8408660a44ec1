/**
 * reserve → settle / cancel and penalize through the limiter: which policies refuse, the
 * arguments, one store call per settle, idempotence under concurrent calls, cost 0, the failure
 * policy. The algorithms' answers themselves are in the conformance table (src/testing/scenarios/debt.ts).
 */
import { Redis } from 'ioredis';
import { useOwnRedisServer, useTestRedis } from '../../../../test/harness/redis';
import {
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  RateLimitArgumentError,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
  type Store,
  slidingLog,
  tokenBucket,
} from '../../src/index';

const testRedis = useTestRedis();

const stores: Array<[string, () => Store]> = [
  ['memory', () => memoryStore()],
  ['redis', () => redisStore({ client: testRedis() })],
  ['redis (batch: false)', () => redisStore({ client: testRedis(), batch: false })],
];

let prefixes = 0;
const prefix = () => `rsp${process.pid}x${prefixes++}`;

describe.each(stores)('reserve, settle, cancel, penalize on the %s store', (_name, makeStore) => {
  const bucket = () =>
    new RateLimiter({
      store: makeStore(),
      policies: tokenBucket({ limit: 100, window: '1h' }),
      prefix: prefix(),
    });

  test.each([
    ['slidingLog', () => slidingLog({ limit: 5, window: '1m' }), 1],
    ['leakyBucket', () => leakyBucket({ limit: 5, window: '1m', burst: 3 }), 1],
  ])(
    'a limiter with a %s policy refuses reserve and penalize (FLOODGATE_NO_DEBT), and still consumes',
    async (_kind, policy, at) => {
      const limiter = new RateLimiter({
        store: makeStore(),
        policies: [gcra({ limit: 5, window: '1m' }), policy()],
        prefix: prefix(),
      });
      for (const call of [() => limiter.reserve('k', { cost: 2 }), () => limiter.penalize('k')]) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(RateLimitConfigError);
        expect(error).toMatchObject({ code: 'FLOODGATE_NO_DEBT', field: `policies[${at}]` });
      }
      // Nothing was charged by the refused calls.
      const d = await limiter.consume('k');
      expect(d.allowed).toBe(true);
      expect(d.policies[0]!.remaining).toBe(4);
    },
  );

  test.each([[-1], [1.5], [Number.NaN], ['3']])(
    'settle(%p) rejects with RateLimitArgumentError and charges nothing',
    async (actual) => {
      const limiter = bucket();
      const r = await limiter.reserve('k', { cost: 10 });
      await expect(r.settle(actual as number)).rejects.toBeInstanceOf(RateLimitArgumentError);
      // Still unsettled: a valid settle goes through.
      expect(await r.settle(4)).toMatchObject({ allowed: true, remaining: 96 });
    },
  );

  test('concurrent settles and cancels apply once: the first one called wins', async () => {
    const limiter = bucket();
    const r = await limiter.reserve('k', { cost: 10 });
    const answers = await Promise.all([r.settle(30), r.settle(30), r.cancel(), r.settle(0)]);
    for (const a of answers) expect(a).toEqual(answers[0]);
    // 30 charged in all, once.
    expect(await limiter.peek('k', { cost: 0 })).toMatchObject({ remaining: 70 });
  });

  test('a settle at the estimate, and a reservation never settled, stay charged at the estimate', async () => {
    const limiter = bucket();
    const r = await limiter.reserve('k', { cost: 10 });
    expect(await r.settle(10)).toMatchObject({ allowed: true, remaining: 90 });
    await limiter.reserve('k', { cost: 5 });
    expect(await limiter.peek('k', { cost: 0 })).toMatchObject({ remaining: 85 });
  });

  test('penalize and reserve of cost 0 write nothing', async () => {
    const limiter = bucket();
    // penalize answers as peek(key) (cost 1) would, after its charge.
    expect(await limiter.penalize('k', { cost: 0 })).toEqual(await limiter.peek('k'));
    const r = await limiter.reserve('k', { cost: 0 });
    await r.cancel();
    expect(await limiter.peek('k', { cost: 0 })).toMatchObject({ remaining: 100, resetAfter: 0 });
  });

  test('penalize charges past the limit: denied until the debt is repaid', async () => {
    const limiter = new RateLimiter({
      store: makeStore(),
      policies: fixedWindow({ limit: 3, window: '1h' }),
      prefix: prefix(),
    });
    const d = await limiter.penalize('k', { cost: 10 });
    expect(d).toMatchObject({ allowed: false, remaining: 0 });
    expect(d.retryAfter).toBeGreaterThan(0);
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, remaining: 0 });
  });
});

describe('on Redis', () => {
  // Its own server for the counted script calls: other jest workers run scripts on the shared
  // one, and flush its script cache (a NOSCRIPT makes one call two).
  const own = useOwnRedisServer();
  /** EVALSHA and EVAL calls Redis has counted (INFO commandstats). */
  async function scriptCalls(redis: Redis): Promise<number> {
    const info = await redis.info('commandstats');
    let calls = 0;
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
    return calls;
  }

  test.each([
    ['above the estimate', 25],
    ['below the estimate', 3],
  ])('a settle %s is one script call for every policy', async (_what, actual) => {
    const redis = own().client;
    const limiter = new RateLimiter({
      store: redisStore({ client: redis, batch: false }),
      policies: [
        tokenBucket({ limit: 100, window: '1h' }),
        fixedWindow({ limit: 50, window: '1h' }),
      ],
      prefix: prefix(),
    });
    const r = await limiter.reserve('k', { cost: 10 });
    const before = await scriptCalls(redis);
    const d = await r.settle(actual);
    expect((await scriptCalls(redis)) - before).toBe(1);
    expect(d.policies.map((p) => p.remaining)).toEqual(
      actual > 10 ? [100 - actual - 1, 50 - actual - 1] : [100 - actual, 50 - actual],
    );
  });

  test('a settle the store cannot answer gets the failure policy, not an exception', async () => {
    const client = new Redis(testRedis().options);
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: false }),
      policies: tokenBucket({ limit: 100, window: '1h' }),
      prefix: prefix(),
      onStoreError: 'closed',
      timeout: 200,
    });
    const r = await limiter.reserve('k', { cost: 10 });
    client.disconnect();
    const d = await r.settle(40);
    expect(d).toMatchObject({ allowed: false, reason: 'store-error' });
  });

  test('a reservation the failure policy admitted refunds nothing on settle (it may never have been charged)', async () => {
    const store = memoryStore();
    const shared = { store, policies: tokenBucket({ limit: 100, window: '1h' }), prefix: prefix() };
    const healthy = new RateLimiter(shared);
    await healthy.consume('k', { cost: 50 });
    // The same budget, through a store whose decisions fail: onStoreError 'open' admits.
    const failing = new RateLimiter({ ...shared, store: failingDecisions(store) });
    const r = await failing.reserve('k', { cost: 10 });
    expect(r).toMatchObject({ allowed: true, reason: 'store-error' });
    await r.settle(0);
    expect(await healthy.peek('k', { cost: 0 })).toMatchObject({ remaining: 50 });
  });
});

/** `store` whose decisions fail (refunds, charges and the rest are the store's own). */
function failingDecisions(store: Store): Store {
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name !== 'prepare') return Reflect.get(target, name, receiver);
      return (...args: Parameters<Store['prepare']>) =>
        new Proxy(target.prepare(...args), {
          get(prepared, member, r) {
            if (member === 'decideNow') {
              return () => {
                throw new Error('decide failed');
              };
            }
            if (member === 'decide') return () => Promise.reject(new Error('decide failed'));
            return Reflect.get(prepared, member, r);
          },
        });
    },
  });
}
