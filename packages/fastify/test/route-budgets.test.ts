/**
 * A route's `config.rateLimit` counts per route, as @fastify/rate-limit does and as
 * @floodgate/nestjs scopes per route: routes with equal policies on the plugin's store do not
 * spend each other's budget. Sharing stays possible on purpose, through one `limiter` or one
 * `rateLimitHook` on several routes. On the memory store and on Redis.
 */
import { fixedWindow, memoryStore, RateLimiter, redisStore, type Store } from '@floodgate/core';
import { rateLimit, rateLimitHook } from '@floodgate/fastify';
import { warningsDuring } from '@floodgate/http-test-kit';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../test/harness/redis';

let redis: Redis;
beforeAll(() => {
  redis = connectIoredis();
});
afterAll(async () => {
  await redis.quit();
});

// A fixed clock: a minute's edge between two requests would refill the window mid-test.
const clock = () => 1_700_000_010_000;
const perMinute = (limit: number) => fixedWindow({ limit, window: '1m', name: 'per-minute' });

describe.each([
  ['memory', () => memoryStore({ clock })],
  ['redis', () => redisStore({ client: redis, clock })],
] as [string, () => Store][])('on the %s store', (storeName, makeStore) => {
  let store: Store;
  let app: FastifyInstance | undefined;
  beforeEach(async () => {
    if (storeName === 'redis') await flushRedis(redis);
    store = makeStore();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const statuses = async (url: string, n: number, method: 'GET' | 'POST' | 'HEAD' = 'GET') => {
    const seen: number[] = [];
    for (let i = 0; i < n; i++) seen.push((await app!.inject({ method, url })).statusCode);
    return seen;
  };

  it('routes with equal config.rateLimit policies each have their own budget, silently', async () => {
    app = Fastify();
    const codes = await warningsDuring(async () => {
      await app!.register(rateLimit, { store, global: false });
      app!.get('/search', { config: { rateLimit: { policies: perMinute(2) } } }, async () => 'ok');
      app!.get('/export', { config: { rateLimit: { policies: perMinute(2) } } }, async () => 'ok');
      await app!.ready();
    });
    expect(codes).toEqual([]);
    expect(await statuses('/export', 3)).toEqual([200, 200, 429]);
    expect(await statuses('/search', 3)).toEqual([200, 200, 429]);
  });

  it('one options object on two routes still counts per route; HEAD shares its GET', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, global: false });
    const config = { rateLimit: { policies: perMinute(2) } };
    app.get('/a', { config }, async () => 'ok');
    app.post('/a', { config }, async () => 'ok');
    app.get('/b', { config }, async () => 'ok');
    expect(await statuses('/a', 1, 'HEAD')).toEqual([200]);
    expect(await statuses('/a', 2)).toEqual([200, 429]);
    expect(await statuses('/a', 3, 'POST')).toEqual([200, 200, 429]);
    expect(await statuses('/b', 3)).toEqual([200, 200, 429]);
  });

  it('a route with its own options does not spend the global budget, nor the global its', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, policies: perMinute(2) });
    app.get('/plain', async () => 'ok');
    app.get('/other', async () => 'ok');
    app.get('/own', { config: { rateLimit: { headers: { legacy: true } } } }, async () => 'ok');
    expect(await statuses('/own', 3)).toEqual([200, 200, 429]);
    // The routes without config share the plugin's one budget, as @fastify/rate-limit's global.
    expect(await statuses('/plain', 1)).toEqual([200]);
    expect(await statuses('/other', 2)).toEqual([200, 429]);
  });

  it('a bad route prefix is still reported with its field and value', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, global: false });
    let error: unknown;
    try {
      app.get('/x', { config: { rateLimit: { prefix: 'a{b', policies: perMinute(1) } } }, () => '');
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toMatchObject({
      name: 'RateLimitConfigError',
      field: 'routes["GET /x"].config.rateLimit.prefix',
      value: 'a{b',
    });
  });

  it('sharing on purpose: one limiter, or one rateLimitHook, on several routes', async () => {
    app = Fastify();
    const shared = new RateLimiter({ store, prefix: 'shared', policies: perMinute(2) });
    const codes = await warningsDuring(async () => {
      await app!.register(rateLimit, { store, global: false });
      app!.get('/one', { config: { rateLimit: { limiter: shared } } }, async () => 'ok');
      app!.get('/two', { config: { rateLimit: { limiter: shared } } }, async () => 'ok');
      const hook = rateLimitHook({ store, prefix: 'hooked', policies: perMinute(2) });
      app!.get('/three', { onRequest: hook }, async () => 'ok');
      app!.get('/four', { onRequest: hook }, async () => 'ok');
      await app!.ready();
    });
    expect(codes).toEqual([]);
    expect(await statuses('/one', 1)).toEqual([200]);
    expect(await statuses('/two', 2)).toEqual([200, 429]);
    expect(await statuses('/three', 1)).toEqual([200]);
    expect(await statuses('/four', 2)).toEqual([200, 429]);
  });
});
