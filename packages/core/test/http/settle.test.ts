/**
 * `cost: { estimate, actual }` over every adapter (Express 4/5, Koa 2/3, Fastify) and both
 * stores: the estimate is charged up front, the actual cost settled after the response (refund
 * below, debt above), an aborted request keeps its estimate; and the options' errors. Headers,
 * trailers and streams: packages/express/test/settle.test.ts.
 */
import http from 'node:http';
import {
  fixedWindow,
  RateLimiter as Limiter,
  type RateLimiter,
  type Store,
  slidingLog,
  tokenBucket,
} from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import {
  configErrorOf,
  FRAMEWORKS,
  holdRequests,
  storesOn,
  useTestApp,
  useTestRedisConnection,
} from '@floodgate/http-test-kit';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';

const redis = useTestRedisConnection();
// A frozen clock: nothing refills, so every unit charged stays visible.
const clock = () => 1_700_000_055_000;
const stores = storesOn(clock, redis);

/** `?name=` of a request (Express, Koa and Fastify requests all carry `url`). */
const param = (req: unknown, name: string) =>
  Number(new URL((req as { url: string }).url, 'http://x').searchParams.get(name));

/** Polls `probe` (bounded: about 2 s) until it answers `expected`; returns the last answer. */
async function eventually<T>(probe: () => Promise<T>, expected: T): Promise<T> {
  let last = await probe();
  for (let i = 0; i < 100 && last !== expected; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    last = await probe();
  }
  return last;
}

const remaining = (limiter: RateLimiter) => () =>
  limiter.peek('client', { cost: 0 }).then((d) => d.remaining);

describe.each(FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  describe.each(stores)('on the %s store', (storeName, makeStore) => {
    let store: Store;
    beforeEach(async () => {
      if (storeName === 'redis') await flushRedis(redis());
      store = makeStore();
    });
    const settling = (limiter: RateLimiter) => ({
      limiter,
      key: () => 'client',
      cost: { estimate: 5, actual: (req: unknown) => param(req, 'used') },
    });

    it('charges the estimate, then refunds below it and charges the overrun into debt', async () => {
      const limiter = new Limiter({ store, policies: tokenBucket({ limit: 10, window: '1h' }) });
      const url = await start({ limiters: [settling(limiter)] });
      const first = await request(url).get('/?used=3');
      expect(first.status).toBe(200);
      // The response went out with the estimate charged.
      expect(first.headers.ratelimit).toMatch(/;r=5;/);
      expect(await eventually(remaining(limiter), 7)).toBe(7);
      // 7 − 25: 18 units of debt.
      expect((await request(url).get('/?used=25')).status).toBe(200);
      expect(await eventually(remaining(limiter), 0)).toBe(0);
      const denied = await request(url).get('/?used=0');
      expect(denied.status).toBe(429);
      expect(denied.headers.ratelimit).toMatch(/;r=0;t=\d+/);
      const t = Number(/;t=(\d+)/.exec(String(denied.headers.ratelimit))?.[1]);
      // Tokens come back at 10 an hour: 23 of them (18 of debt, 5 for the estimate) take 8280 s.
      expect(t).toBe(8280);
      expect(Number(denied.headers['retry-after'])).toBe(8280);
    });

    it('a request whose client goes away before its response stays charged at its estimate', async () => {
      const limiter = new Limiter({ store, policies: tokenBucket({ limit: 10, window: '1h' }) });
      const hold = holdRequests();
      const url = await start({ limiters: [settling(limiter)], onHold: hold.onHold });
      const aborted = http.get(`${url}/hold?used=0`);
      aborted.on('error', () => undefined);
      await hold.reached;
      aborted.destroy();
      await new Promise((resolve) => setTimeout(resolve, 100));
      hold.finish();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await remaining(limiter)()).toBe(5);
    });
  });
});

describe('options', () => {
  it('refuses, at construction, policies without debt, count with actual, and a bad actual', () => {
    const actual = (req: unknown) => param(req, 'used');
    expect(
      configErrorOf(() =>
        rateLimit({
          policies: slidingLog({ limit: 5, window: '1m' }),
          cost: { estimate: 1, actual },
        }),
      ),
    ).toMatchObject({ field: 'rateLimit.policies[0]', value: 'sliding-log' });
    expect(
      configErrorOf(() =>
        rateLimit({
          policies: fixedWindow({ limit: 5, window: '1m' }),
          count: 'failed',
          cost: { estimate: 1, actual },
        }),
      ),
    ).toMatchObject({ field: 'rateLimit.count' });
    expect(
      configErrorOf(() =>
        rateLimit({
          policies: fixedWindow({ limit: 5, window: '1m' }),
          cost: { estimate: 1, actual: 3 as never },
        }),
      ),
    ).toMatchObject({ field: 'rateLimit.cost.actual' });
    expect(
      configErrorOf(() =>
        rateLimit({
          policies: fixedWindow({ limit: 5, window: '1m' }),
          cost: { estimate: -1, actual },
        }),
      ),
    ).toMatchObject({ field: 'rateLimit.cost.estimate' });
  });
});
