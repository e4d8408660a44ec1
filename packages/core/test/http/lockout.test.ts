/**
 * Blocked keys through every adapter (Express 4/5, Koa 2/3, Fastify) and both stores: a
 * `blockDuration` lockout (plain and progressive) and `limiter.block` answer 429 with
 * `Retry-After` = the block's time left (none for 'forever') and a problem body that says so.
 */
import { fixedWindow, RateLimiter, type Store } from '@floodgate/core';
import { QUOTA_EXCEEDED_TYPE } from '@floodgate/core/http';
import { FRAMEWORKS, storesOn, useTestApp, useTestRedisConnection } from '@floodgate/http-test-kit';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';

const redis = useTestRedisConnection();

// Aligned to a minute, so a fixed window of 1m has exactly 45s left at T0.
const T0 = 1_700_000_040_000 + 15_000;
let now = T0;
const clock = () => now;
const stores = storesOn(clock, redis);

describe.each(FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  describe.each(stores)('on the %s store', (storeName, makeStore) => {
    let store: Store;
    beforeEach(async () => {
      now = T0;
      if (storeName === 'redis') await flushRedis(redis());
      store = makeStore();
    });

    it('a lockout: 429 with Retry-After = the time left and a problem body that says it is a block', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies: fixedWindow({ limit: 2, window: '1m', name: 'login', blockDuration: '15m' }),
          },
        ],
      });
      expect((await request(url).get('/')).status).toBe(200);
      expect((await request(url).get('/')).status).toBe(200);
      const blocked = await request(url).get('/');
      expect(blocked.status).toBe(429);
      expect(blocked.headers['retry-after']).toBe('900');
      expect(blocked.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(blocked.text)).toEqual({
        type: QUOTA_EXCEEDED_TYPE,
        title: 'Quota Exceeded',
        status: 429,
        detail: 'This client is blocked under policy "login"; retry in 900 s.',
        'violated-policies': ['login'],
        blocked: true,
      });
      // A new window does not lift the block; its end does.
      now = T0 + 899_500;
      const later = await request(url).get('/');
      expect([later.status, later.headers['retry-after']]).toEqual([429, '1']);
      now = T0 + 900_000;
      expect((await request(url).get('/')).status).toBe(200);
    });

    it('a progressive lockout doubles the block each time, up to max', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies: fixedWindow({
              limit: 1,
              window: '1m',
              name: 'login',
              blockDuration: { initial: '1m', multiplier: 2, max: '3m', forgetAfter: '1h' },
            }),
          },
        ],
      });
      const retryAfters: (string | undefined)[] = [];
      for (let round = 0; round < 3; round++) {
        expect((await request(url).get('/')).status).toBe(200);
        const blocked = await request(url).get('/');
        expect(blocked.status).toBe(429);
        expect(JSON.parse(blocked.text).blocked).toBe(true);
        retryAfters.push(blocked.headers['retry-after']);
        now += Number(blocked.headers['retry-after']) * 1000;
      }
      expect(retryAfters).toEqual(['60', '120', '180']);
    });

    it("limiter.block: 'forever' has no Retry-After; unblock lets the client in again", async () => {
      const limiter = new RateLimiter({
        store,
        policies: fixedWindow({ limit: 5, window: '1m', name: 'api' }),
      });
      const url = await start({ limiters: [{ limiter }] });
      await limiter.block('ip:127.0.0.1', 'forever');
      const forever = await request(url).get('/');
      expect(forever.status).toBe(429);
      expect(forever.headers['retry-after']).toBeUndefined();
      expect(JSON.parse(forever.text)).toMatchObject({
        detail:
          'This client is blocked under policy "api" until it is unblocked; retrying will not help.',
        blocked: true,
      });
      await limiter.block('ip:127.0.0.1', '30s');
      expect((await request(url).get('/')).headers['retry-after']).toBe('30');
      await limiter.unblock('ip:127.0.0.1');
      const open = await request(url).get('/');
      expect(open.status).toBe(200);
      expect(open.headers.ratelimit).toBe('"api";r=4;t=45');
    });
  });
});
