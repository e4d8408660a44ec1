/**
 * Misconfiguration diagnostics: each is reported exactly once with its stable code,
 * can be turned off (all, or per code), and stays silent in a correct setup. Through real
 * servers on Express 4/5 and Koa 2/3.
 */

import {
  fixedWindow,
  memoryStore,
  type Policy,
  RateLimiter,
  redisStore,
  type Store,
} from '@floodgate/core';
import {
  FRAMEWORKS,
  type TestApp,
  type TestAppOptions,
  useTestApp,
  useTestRedisConnection,
  warningsDuring,
  withoutFastify,
} from '@floodgate/http-test-kit';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';

type Req = { path: string; get(name: string): string | undefined };

const frameworks = withoutFastify(FRAMEWORKS);
const redis = useTestRedisConnection();

const clock = () => 1_700_000_010_000;

const perMinute = (limit: number, name?: string): Policy =>
  fixedWindow({ limit, window: '1m', ...(name === undefined ? {} : { name }) });

describe.each(frameworks)('%s', (_framework, serve) => {
  const { start, close } = useTestApp(serve);
  /** Starts an app with `limiters`, sends `send` requests; returns the warning codes. */
  const diagnose = (
    options: TestAppOptions,
    send: (url: string) => Promise<void> = async (url) => {
      for (let i = 0; i < 3; i++) await request(url).get('/');
    },
  ) => warningsDuring(async () => send(await start(options)));

  it('FLOODGATE_DOUBLE_COUNT: one limiter mounted twice, once', async () => {
    const limiter = new RateLimiter({ store: memoryStore({ clock }), policies: perMinute(10) });
    const codes = await diagnose({ limiters: [{ limiter }, { limiter }] });
    expect(codes).toEqual(['FLOODGATE_DOUBLE_COUNT']);
  });

  it('FLOODGATE_DOUBLE_COUNT: a third limiter repeating the first, not two distinct ones', async () => {
    const a = new RateLimiter({ store: memoryStore({ clock }), policies: perMinute(10, 'a') });
    const b = new RateLimiter({ store: memoryStore({ clock }), policies: perMinute(10, 'b') });
    expect(await diagnose({ limiters: [{ limiter: a }, { limiter: b }] })).toEqual([]);
    const codes = await diagnose({ limiters: [{ limiter: a }, { limiter: b }, { limiter: a }] });
    expect(codes).toEqual(['FLOODGATE_DOUBLE_COUNT']);
  });

  it('FLOODGATE_PROXY_HOPS: trust every proxy hop, once', async () => {
    const codes = await diagnose({ trustProxy: true, limiters: [{ policies: perMinute(10) }] });
    expect(codes).toEqual(['FLOODGATE_PROXY_HOPS']);
  });

  it.each([
    ['FLOODGATE_PROXY_HOPS', true, 'allow'],
    ['FLOODGATE_PROXY_HOPS', true, 'deny'],
  ] as const)(
    '%s: an address list on a middleware keyed by client id (trust proxy %s, %s), once',
    async (code, trustProxy, list) => {
      // Nothing is keyed by address, but the list matches one: with every hop trusted, any
      // client claims 10.0.0.1 in X-Forwarded-For. (FLOODGATE_UNTRUSTED_PROXY, the other proxy
      // check now run for lists, is once per process: the untrusted-proxy test covers it.)
      const limiters = [{ policies: perMinute(10), key: () => 'client', [list]: ['10.0.0.0/8'] }];
      const codes = await diagnose({ trustProxy, limiters }, async (url) => {
        for (let i = 0; i < 3; i++) await request(url).get('/').set('X-Forwarded-For', '10.0.0.1');
      });
      expect(codes).toEqual([code]);
    },
  );

  it('FLOODGATE_FORWARDED_IGNORED: a Forwarded header without X-Forwarded-For, once', async () => {
    const codes = await diagnose({ limiters: [{ policies: perMinute(10) }] }, async (url) => {
      for (let i = 0; i < 3; i++) {
        await request(url).get('/').set('Forwarded', `for=198.51.100.${i}`);
      }
    });
    expect(codes).toEqual(['FLOODGATE_FORWARDED_IGNORED']);
  });

  it('FLOODGATE_AUTH_AFTER_LIMITER: credentials but no client id, once', async () => {
    const limiters = [
      {
        policies: perMinute(10),
        key: ['clientId', 'ip'],
        // The session this getter reads is loaded by a step that runs after the limiter.
        clientId: (req: Req & { session?: { userId?: string } }) => req.session?.userId,
      },
    ];
    const codes = await diagnose({ limiters }, async (url) => {
      await request(url).get('/');
      for (let i = 0; i < 3; i++) await request(url).get('/').set('Authorization', 'Basic eDp5');
    });
    expect(codes).toEqual(['FLOODGATE_AUTH_AFTER_LIMITER']);
  });

  it('FLOODGATE_UNVERIFIED_APP_KEY: at construction, once', async () => {
    const codes = await diagnose({ limiters: [{ policies: perMinute(10), key: 'appKey' }] });
    expect(codes).toEqual(['FLOODGATE_UNVERIFIED_APP_KEY']);
  });

  it('validate: false turns every diagnostic off; validate: { CODE: false } one', async () => {
    const noisy = {
      policies: perMinute(10),
      key: ['appKey', 'ip'],
    };
    const send = async (url: string) => {
      for (let i = 0; i < 3; i++) await request(url).get('/').set('Forwarded', 'for=192.0.2.1');
    };
    expect(
      await diagnose({ trustProxy: true, limiters: [{ ...noisy, validate: false }] }, send),
    ).toEqual([]);
    await close();
    const codes = await diagnose(
      {
        trustProxy: true,
        limiters: [
          {
            ...noisy,
            validate: { FLOODGATE_PROXY_HOPS: false, FLOODGATE_FORWARDED_IGNORED: true },
          },
        ],
      },
      send,
    );
    expect(codes.sort()).toEqual(['FLOODGATE_FORWARDED_IGNORED', 'FLOODGATE_UNVERIFIED_APP_KEY']);
  });

  it('a correct setup is silent: hop count, verified app keys, auth before the limiter', async () => {
    const store = memoryStore({ clock });
    const codes = await diagnose(
      {
        trustProxy: 1,
        limiters: [
          {
            store,
            prefix: 'api',
            policies: perMinute(100, 'api'),
            key: ['clientId', 'appKey', 'ip'],
            verifyAppKey: (appKey: string) => appKey === 'issued',
          },
          // Another route's limiter on the same store: its own policy name, its own budget.
          {
            store,
            policies: perMinute(100, 'search'),
            skip: (req: Req) => req.path !== '/search',
          },
        ],
      },
      async (url) => {
        await request(url).get('/').set('X-Forwarded-For', '198.51.100.1');
        await request(url).get('/').set('Authorization', 'Bearer alice');
        await request(url).get('/').set('x-app-key', 'issued');
        await request(url).get('/').set('x-app-key', 'minted');
        await request(url).get('/search').set('X-Forwarded-For', '198.51.100.2, 198.51.100.3');
      },
    );
    expect(codes).toEqual([]);
  });

  // Budgets are told apart by the Redis client behind a store: each test gets its own
  // connection, as the apps of earlier tests (still referenced) would share its budgets.
  let connections: Redis[] = [];
  describe.each<[string, () => Store]>([
    ['memory', () => memoryStore({ clock })],
    [
      'redis',
      () => {
        const client = redis().duplicate();
        connections.push(client);
        return redisStore({ client, clock });
      },
    ],
  ])('on the %s store', (storeName, makeStore) => {
    beforeEach(async () => {
      if (storeName === 'redis') await flushRedis(redis());
    });
    afterEach(() => {
      for (const client of connections) client.disconnect();
      connections = [];
    });

    it('FLOODGATE_SHARED_BUDGET: two middlewares on one store, prefix and policies, once', async () => {
      const store = makeStore();
      const shared = perMinute(2);
      let statuses: number[] = [];
      const codes = await diagnose(
        {
          limiters: [
            { store, policies: shared, skip: (req: Req) => req.path !== '/search' },
            { store, policies: shared, skip: (req: Req) => req.path !== '/export' },
          ],
        },
        async (url) => {
          statuses = [];
          for (const path of ['/search', '/search', '/export', '/export']) {
            statuses.push((await request(url).get(path)).status);
          }
        },
      );
      expect(codes).toEqual(['FLOODGATE_SHARED_BUDGET']);
      // What the warning is about: /export is refused because /search spent the budget.
      expect(statuses).toEqual([200, 200, 429, 429]);
    });

    it('differently named policies never share state; one limiter shares a budget on purpose', async () => {
      const store = makeStore();
      const limit = { limit: 2, window: '1m' } as const;
      const sharedOnPurpose = new RateLimiter({
        store,
        prefix: 'both',
        policies: fixedWindow({ ...limit, name: 'both' }),
      });
      let statuses: number[] = [];
      const codes = await diagnose(
        {
          limiters: [
            {
              store,
              policies: fixedWindow({ ...limit, name: 'search' }),
              skip: (req: Req) => req.path !== '/search',
            },
            {
              store,
              policies: fixedWindow({ ...limit, name: 'export' }),
              skip: (req: Req) => req.path !== '/export',
            },
            { limiter: sharedOnPurpose, skip: (req: Req) => req.path !== '/a' },
            { limiter: sharedOnPurpose, skip: (req: Req) => req.path !== '/b' },
          ],
        },
        async (url) => {
          statuses = [];
          for (const path of ['/search', '/search', '/export', '/export', '/a', '/b', '/a']) {
            statuses.push((await request(url).get(path)).status);
          }
        },
      );
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429]);
      expect(codes).toEqual([]);
    });
  });
});

describe('FLOODGATE_LIMITER_PER_REQUEST', () => {
  it('middlewares built inside a handler: reported once per process, on every framework', async () => {
    const apps: TestApp[] = [];
    try {
      let remaining: number[] = [];
      const codes = await warningsDuring(async () => {
        remaining = [];
        for (const [, serve] of frameworks) {
          const app = await serve({ perRequest: true, limiters: [{ policies: perMinute(100) }] });
          apps.push(app);
          for (let i = 0; i < 3; i++) {
            remaining.push((await request(app.url).get('/')).body.rateLimit.remaining);
          }
        }
      });
      // What the warning is about: a new budget every time, nothing is ever spent.
      expect(remaining).toEqual(Array(12).fill(99));
      expect(codes).toEqual(['FLOODGATE_LIMITER_PER_REQUEST']);
    } finally {
      for (const app of apps) await app.close();
    }
  });
});
