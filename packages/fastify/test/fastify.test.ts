/**
 * What only the Fastify plugin has, through `fastify.inject`, on the memory store and on Redis:
 * per-route `config.rateLimit` (own options or `false`), `global: false`, 404s, the hook that
 * runs the limiter, fastify-plugin's reach into child contexts, and option errors at
 * registration. The behaviour every adapter shares (headers, keys, problem bodies, concurrency,
 * store errors) is the scenario table of @floodgate/http-test-kit, which http-scenarios.test.ts
 * runs on Fastify with a real listener.
 */
import { fixedWindow, memoryStore, redisStore, type Store } from '@floodgate/core';
import rateLimitDefault, { rateLimit } from '@floodgate/fastify';
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

const stores: [string, () => Store][] = [
  ['memory', () => memoryStore()],
  ['redis', () => redisStore({ client: redis })],
];

// Windows from each key's first request: two requests a test expects in one window never fall
// on either side of a clock-aligned minute edge (a busy machine once spread them over one).
const perMinute = (limit: number, name = 'per-minute') =>
  fixedWindow({ limit, window: '1m', name, anchor: 'first-request' });

describe.each(stores)('on the %s store', (storeName, makeStore) => {
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

  const statuses = async (url: string, n: number, method: 'GET' | 'POST' = 'GET') => {
    const seen: number[] = [];
    for (let i = 0; i < n; i++) seen.push((await app!.inject({ method, url })).statusCode);
    return seen;
  };

  it('limits every route by default, in onRequest, and exposes request.rateLimit', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, policies: perMinute(2) });
    app.get('/', async (request) => ({ remaining: request.rateLimit?.remaining }));
    const first = await app.inject('/');
    expect(first.json()).toEqual({ remaining: 1 });
    expect(first.headers.ratelimit).toMatch(/^"per-minute";r=1;t=\d+$/);
    await app.inject('/');
    const denied = await app.inject('/');
    expect(denied.statusCode).toBe(429);
    expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(denied.json()['violated-policies']).toEqual(['per-minute']);
    expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('a route with config.rateLimit gets its own limits; `false` turns them off', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, policies: perMinute(1) });
    app.get('/default', async () => 'ok');
    app.get(
      '/strict',
      { config: { rateLimit: { policies: perMinute(3, 'strict') } } },
      async () => 'ok',
    );
    app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
    expect(await statuses('/default', 2)).toEqual([200, 429]);
    const strict = await app.inject('/strict');
    // The route's policies replace the plugin's; its store (from the plugin) is inherited.
    expect(strict.headers['ratelimit-policy']).toBe('"strict";q=3;w=60');
    expect(await statuses('/strict', 3)).toEqual([200, 200, 429]);
    const health = await app.inject('/health');
    expect([health.statusCode, health.headers.ratelimit]).toEqual([200, undefined]);
    expect(await statuses('/health', 3)).toEqual([200, 200, 200]);
  });

  it('global: false limits only the routes that ask, with the plugin options as defaults', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, global: false, headers: { legacy: true } });
    app.get('/open', async () => 'ok');
    app.get('/limited', { config: { rateLimit: { policies: perMinute(1) } } }, async () => 'ok');
    expect(await statuses('/open', 3)).toEqual([200, 200, 200]);
    expect(await statuses('/nowhere', 3)).toEqual([404, 404, 404]);
    const limited = await app.inject('/limited');
    expect(limited.headers['x-ratelimit-limit']).toBe('1');
    expect((await app.inject('/limited')).statusCode).toBe(429);
  });

  it('404s are limited by default, and not with notFound: false', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, policies: perMinute(2) });
    app.get('/', async () => 'ok');
    expect(await statuses('/missing', 3)).toEqual([404, 404, 429]);
    // The same key's budget: 404s and routes count together under the plugin's policies.
    expect((await app.inject('/')).statusCode).toBe(429);
    await app.close();

    app = Fastify();
    await app.register(rateLimit, { store, prefix: 'nf', policies: perMinute(1), notFound: false });
    expect(await statuses('/missing', 3)).toEqual([404, 404, 404]);
  });

  it('onRequest answers before the body is parsed; hook: preHandler runs after validation hooks', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, policies: perMinute(1) });
    app.post('/', async () => 'ok');
    const bad = {
      method: 'POST' as const,
      url: '/',
      payload: '{not json',
      headers: { 'content-type': 'application/json' },
    };
    expect((await app.inject(bad)).statusCode).toBe(400); // admitted, then the body is refused
    expect((await app.inject(bad)).statusCode).toBe(429); // refused before reading the body
    await app.close();

    app = Fastify();
    app.addHook('preValidation', async (request) => {
      (request as { user?: unknown }).user = { id: String(request.headers['x-user']) };
    });
    await app.register(rateLimit, {
      store,
      prefix: 'ph',
      hook: 'preHandler',
      key: 'clientId',
      policies: perMinute(1),
    });
    app.get('/', async () => 'ok');
    const as = (user: string) => app!.inject({ url: '/', headers: { 'x-user': user } });
    expect([(await as('ann')).statusCode, (await as('bob')).statusCode]).toEqual([200, 200]);
    expect((await as('ann')).statusCode).toBe(429);
  });

  it('reaches routes in child contexts registered after it (fastify-plugin), and the default export works', async () => {
    app = Fastify();
    await app.register(rateLimitDefault, { store, policies: perMinute(1) });
    await app.register(
      async (child) => {
        child.get('/inner', async () => 'ok');
      },
      { prefix: '/api' },
    );
    expect(await statuses('/api/inner', 2)).toEqual([200, 429]);
  });

  it('HEAD shares the GET route budget', async () => {
    app = Fastify();
    await app.register(rateLimit, { store, global: false });
    app.get('/', { config: { rateLimit: { policies: perMinute(2) } } }, async () => 'ok');
    expect((await app.inject({ method: 'HEAD', url: '/' })).statusCode).toBe(200);
    expect(await statuses('/', 2)).toEqual([200, 429]);
  });

  it('an onLimited that sends nothing lets the request through', async () => {
    app = Fastify();
    const seen: number[] = [];
    await app.register(rateLimit, {
      store,
      policies: perMinute(1),
      onLimited: (_request, _reply, decision) => {
        seen.push(decision.retryAfter);
      },
    });
    app.get('/', async (request) => ({ allowed: request.rateLimit?.allowed }));
    await app.inject('/');
    const let_through = await app.inject('/');
    expect([let_through.statusCode, let_through.json()]).toEqual([200, { allowed: false }]);
    expect(seen).toHaveLength(1);
  });
});

describe('bad options fail at registration, naming the field', () => {
  it.each([
    [{ policies: perMinute(1), hook: 'onSend' }, 'rateLimit.hook'],
    [{ policies: perMinute(1), global: 'yes' }, 'rateLimit.global'],
    [{ policies: perMinute(1), notFound: 1 }, 'rateLimit.notFound'],
    [{ policies: perMinute(1), windowMs: 1000 }, 'rateLimit.windowMs'],
  ])('%p', async (options, field) => {
    const app = Fastify();
    await expect(app.register(rateLimit, options as never)).rejects.toMatchObject({
      name: 'RateLimitConfigError',
      field,
    });
    await app.close();
  });

  it('a bad route config names the route', async () => {
    const app = Fastify();
    await app.register(rateLimit, { global: false });
    expect(() =>
      app.get(
        '/x',
        { config: { rateLimit: { policies: perMinute(1), cost: -1 } } },
        async () => 'ok',
      ),
    ).toThrow(expect.objectContaining({ field: 'routes["GET /x"].config.rateLimit.cost' }));
    await app.close();
  });
});
