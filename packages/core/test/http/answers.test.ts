/**
 * What the adapters answer in the cases that are not a plain "over quota" (a cost no policy
 * can admit, limit 0, a first-request anchor, a store that cannot decide) and in each IETF header
 * draft, for every
 * adapter (Express, Koa) and every store. The IETF headers are read back with an independent RFC 9651 parser (`structured-headers`), never
 * with our own formatter.
 */
import {
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  type Policy,
  RateLimiter,
  redisStore,
  type Store,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '@floodgate/core';
import {
  applyRateLimitHeaders,
  QUOTA_EXCEEDED_TYPE,
  STORE_UNAVAILABLE_TYPE,
} from '@floodgate/core/http';
import {
  httpStores,
  NEWEST_FRAMEWORKS,
  useTestApp,
  useTestRedisConnection,
  withoutFastify,
} from '@floodgate/http-test-kit';
import { Redis as IORedis } from 'ioredis';
import { parseDictionary, parseItem, parseList } from 'structured-headers';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';
import { freePort } from '../../../../test/harness/redis-server';

// Aligned to a minute, so a fixed window of 1m has exactly 45s left at T0.
const WINDOW_START = 1_700_000_040_000;
const T0 = WINDOW_START + 15_000;

const frameworks = withoutFastify(NEWEST_FRAMEWORKS);
const redis = useTestRedisConnection();
const stores = httpStores(redis);

/** A real ioredis client for a port nothing listens on: every command fails at once. */
async function deadRedis(): Promise<IORedis> {
  const client = new IORedis({
    host: '127.0.0.1',
    port: await freePort(),
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 200,
    disconnectTimeout: 50,
  });
  client.on('error', () => undefined);
  return client;
}

/** The parameters of one parsed SF Item as a plain object. */
function params(item: [unknown, Map<string, unknown>]): Record<string, unknown> {
  return Object.fromEntries(item[1]);
}

/** `RateLimit-Policy` / `RateLimit` (drafts 8 and 10) parsed: one entry per named item. */
function namedItems(header: string | undefined): Record<string, Record<string, unknown>> {
  expect(header).toBeDefined();
  const out: Record<string, Record<string, unknown>> = {};
  for (const item of parseList(header!)) {
    expect(typeof item[0]).toBe('string');
    out[item[0] as string] = params(item as [unknown, Map<string, unknown>]);
  }
  return out;
}

const QUOTA_HEADERS = [
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

describe.each(frameworks)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  describe.each(stores)('on the %s store', (storeName, makeStore) => {
    let now = T0;
    const clock = () => now;
    let store: Store;
    beforeEach(async () => {
      now = T0;
      if (storeName === 'redis') await flushRedis(redis());
      store = makeStore(clock);
    });

    it('a cost no policy can ever admit: 429 without Retry-After, and the body says so', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies: fixedWindow({ limit: 2, window: '1m', name: 'per-minute' }),
            cost: (req: { get(name: string): string | undefined }) => Number(req.get('x-cost')),
            headers: { legacy: true },
          },
        ],
      });
      const res = await request(url).get('/').set('x-cost', '3');
      expect(res.status).toBe(429);
      expect(res.headers['retry-after']).toBeUndefined();
      const body = JSON.parse(res.text);
      expect(body).toMatchObject({
        type: QUOTA_EXCEEDED_TYPE,
        status: 429,
        'violated-policies': ['per-minute'],
      });
      expect(body.detail).toBe(
        'Policy "per-minute" can never admit this request; retrying will not help.',
      );
      // The quota headers still describe the key, which nothing was charged against.
      expect(namedItems(res.headers.ratelimit)['per-minute']).toEqual({ r: 2, t: 0 });
      // A cost that fits is still answered with a Retry-After once the window is spent.
      await request(url).get('/').set('x-cost', '2');
      const spent = await request(url).get('/').set('x-cost', '1');
      expect(spent.status).toBe(429);
      expect(spent.headers['retry-after']).toBe('45');
    });

    it("anchor 'first-request': the window and Retry-After run from the client's first request", async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies: fixedWindow({ limit: 1, window: '1m', anchor: 'first-request', name: 'own' }),
          },
        ],
      });
      // 15 s into the aligned minute: this client's window runs a full minute from now.
      const first = await request(url).get('/');
      expect(first.status).toBe(200);
      expect(namedItems(first.headers.ratelimit).own).toEqual({ r: 0, t: 60 });
      // Past the aligned minute's end (45 s away), the window still has 10 s to run.
      now += 50_000;
      const denied = await request(url).get('/');
      expect(denied.status).toBe(429);
      expect(denied.headers['retry-after']).toBe('10');
      now += 10_000;
      expect((await request(url).get('/')).status).toBe(200);
    });

    it('limit 0 (a maintenance switch): 429 without Retry-After, quota 0, nothing charged', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies: [
              smoothBursty({ limit: 0, window: '1s', name: 'maintenance' }),
              fixedWindow({ limit: 5, window: '1m', name: 'per-minute' }),
            ],
            headers: { legacy: true },
          },
        ],
      });
      for (let i = 0; i < 2; i++) {
        const res = await request(url).get('/');
        expect(res.status).toBe(429);
        expect(res.headers['retry-after']).toBeUndefined();
        const body = JSON.parse(res.text);
        expect(body['violated-policies']).toEqual(['maintenance']);
        expect(body.detail).toBe(
          'Policy "maintenance" can never admit this request; retrying will not help.',
        );
        expect(namedItems(res.headers['ratelimit-policy']).maintenance).toEqual({ q: 0, w: 1 });
        const quota = namedItems(res.headers.ratelimit);
        expect(quota.maintenance).toEqual({ r: 0, t: 0 });
        // The other policy was not charged: all or nothing.
        expect(quota['per-minute']).toEqual({ r: 5, t: 0 });
      }
    });

    it('RateLimit-Policy advertises the sustained quota per window, never the burst', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies: [
              tokenBucket({ limit: 5, window: '1s', burst: 10, name: 'tb' }),
              gcra({ limit: 60, window: '1m', burst: 20, name: 'gcra' }),
              leakyBucket({ limit: 5, window: '1s', burst: 2, name: 'leaky' }),
            ],
          },
        ],
      });
      const res = await request(url).get('/');
      expect(res.status).toBe(200);
      expect(namedItems(res.headers['ratelimit-policy'])).toEqual({
        tb: { q: 5, w: 1 },
        gcra: { q: 60, w: 60 },
        leaky: { q: 5, w: 1 },
      });
      // `r` is what is available right now: a full bucket's burst, less this request.
      const remaining = namedItems(res.headers.ratelimit);
      expect(remaining.tb!.r).toBe(9);
      expect(remaining.gcra!.r).toBe(19);
      expect(remaining.leaky!.r).toBe(2);
    });

    describe('header drafts, read back with an independent structured-field parser', () => {
      const twoPolicies = () => [
        fixedWindow({ limit: 3, window: '1m', name: 'per-minute' }),
        fixedWindow({ limit: 100, window: '1h', name: 'hourly' }),
      ];

      it("'draft-10' (the default): named items with q/w and r/t", async () => {
        const url = await start({ limiters: [{ store, policies: twoPolicies() }] });
        const res = await request(url).get('/');
        expect(namedItems(res.headers['ratelimit-policy'])).toEqual({
          'per-minute': { q: 3, w: 60 },
          hourly: { q: 100, w: 3600 },
        });
        expect(namedItems(res.headers.ratelimit)).toEqual({
          'per-minute': { r: 2, t: 45 },
          hourly: { r: 99, t: 2745 },
        });
        expect(res.headers['ratelimit-limit']).toBeUndefined();
      });

      it("'draft-8': named items with a partition key that differs per client", async () => {
        const url = await start({
          limiters: [
            {
              store,
              key: ['clientId', 'ip'],
              policies: twoPolicies(),
              headers: { standard: 'draft-8' },
            },
          ],
        });
        const as = (user: string) => request(url).get('/').set('authorization', `Bearer ${user}`);
        const a = await as('alice');
        const policy = namedItems(a.headers['ratelimit-policy']);
        expect(Object.keys(policy)).toEqual(['per-minute', 'hourly']);
        expect(policy['per-minute']).toMatchObject({ q: 3, w: 60 });
        const bytes = (value: unknown) => Buffer.from(value as ArrayBuffer).toString('hex');
        const pk = bytes(policy['per-minute']!.pk);
        expect(policy['per-minute']!.pk).toBeInstanceOf(ArrayBuffer);
        expect(pk).toHaveLength(24);
        expect(bytes(policy.hourly!.pk)).toBe(pk);
        expect(namedItems(a.headers.ratelimit)).toEqual({
          'per-minute': { r: 2, t: 45 },
          hourly: { r: 99, t: 2745 },
        });
        const again = await as('alice');
        expect(bytes(namedItems(again.headers['ratelimit-policy'])['per-minute']!.pk)).toBe(pk);
        const other = await as('bob');
        expect(bytes(namedItems(other.headers['ratelimit-policy'])['per-minute']!.pk)).not.toBe(pk);
      });

      it("'draft-7': RateLimit-Policy items and one combined RateLimit dictionary", async () => {
        const url = await start({
          limiters: [{ store, policies: twoPolicies(), headers: { standard: 'draft-7' } }],
        });
        const res = await request(url).get('/');
        expect(parseList(res.headers['ratelimit-policy']!).map((i) => [i[0], params(i)])).toEqual([
          [3, { w: 60 }],
          [100, { w: 3600 }],
        ]);
        const combined = parseDictionary(res.headers.ratelimit!);
        expect(Object.fromEntries([...combined].map(([k, v]) => [k, v[0]]))).toEqual({
          limit: 3,
          remaining: 2,
          reset: 45,
        });
        await request(url).get('/');
        await request(url).get('/');
        const denied = await request(url).get('/');
        expect(denied.status).toBe(429);
        expect(parseDictionary(denied.headers.ratelimit!).get('remaining')![0]).toBe(0);
        expect(denied.headers['retry-after']).toBe('45');
      });

      it("'draft-6': RateLimit-Policy items and RateLimit-Limit/-Remaining/-Reset", async () => {
        const url = await start({
          limiters: [{ store, policies: twoPolicies(), headers: { standard: 'draft-6' } }],
        });
        const res = await request(url).get('/');
        expect(parseList(res.headers['ratelimit-policy']!).map((i) => i[0])).toEqual([3, 100]);
        expect(parseItem(res.headers['ratelimit-limit']!)[0]).toBe(3);
        expect(parseItem(res.headers['ratelimit-remaining']!)[0]).toBe(2);
        expect(parseItem(res.headers['ratelimit-reset']!)[0]).toBe(45);
        expect(res.headers.ratelimit).toBeUndefined();
      });

      it('stacked limiters: lists append, single-valued headers keep the tightest', async () => {
        const url = await start({
          limiters: [
            {
              store,
              policies: fixedWindow({ limit: 10, window: '1m', name: 'wide' }),
              headers: { standard: 'draft-6' },
            },
            {
              store,
              prefix: 'second',
              policies: fixedWindow({ limit: 2, window: '1h', name: 'narrow' }),
              headers: { standard: 'draft-6' },
            },
          ],
        });
        const res = await request(url).get('/');
        expect(parseList(res.headers['ratelimit-policy']!).map((i) => i[0])).toEqual([10, 2]);
        expect(parseItem(res.headers['ratelimit-limit']!)[0]).toBe(2);
        expect(parseItem(res.headers['ratelimit-remaining']!)[0]).toBe(1);
        expect(parseItem(res.headers['ratelimit-reset']!)[0]).toBe(2745);
      });
    });
  });

  describe('when the store cannot decide', () => {
    let dead: IORedis;
    beforeEach(async () => {
      dead = await deadRedis();
    });
    afterEach(() => dead.disconnect());

    it("'closed': 503 with its own problem type, Retry-After at the next probe, no quota headers", async () => {
      const url = await start({
        limiters: [
          {
            store: redisStore({ client: dead }),
            policies: fixedWindow({ limit: 5, window: '1m', name: 'per-minute' }),
            onStoreError: 'closed',
            circuitBreaker: { failureThreshold: 1, cooldown: '30s' },
            headers: { legacy: true },
          },
        ],
      });
      for (const reason of ['store-error', 'circuit-open']) {
        const res = await request(url).get('/');
        expect(res.status).toBe(503);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        const body = JSON.parse(res.text);
        expect(body).toMatchObject({ type: STORE_UNAVAILABLE_TYPE, status: 503 });
        expect(body.type).not.toBe(QUOTA_EXCEEDED_TYPE);
        expect(body.detail).toContain(reason);
        // The breaker probes the store again 30 s after it opened.
        const retryAfter = Number(res.headers['retry-after']);
        expect(retryAfter).toBeGreaterThanOrEqual(29);
        expect(retryAfter).toBeLessThanOrEqual(30);
        for (const name of QUOTA_HEADERS) expect(res.headers[name]).toBeUndefined();
      }
    });

    it("'open': admitted with no quota headers (the store did not decide)", async () => {
      const url = await start({
        limiters: [
          {
            store: redisStore({ client: dead }),
            policies: fixedWindow({ limit: 5, window: '1m', name: 'per-minute' }),
            headers: { legacy: true },
          },
        ],
      });
      const res = await request(url).get('/');
      expect(res.status).toBe(200);
      expect(res.body.rateLimit).toMatchObject({ allowed: true, reason: 'store-error' });
      for (const name of QUOTA_HEADERS) expect(res.headers[name]).toBeUndefined();
      expect(res.headers['retry-after']).toBeUndefined();
    });

    it('a fallback store decided: its quota headers are sent', async () => {
      const url = await start({
        limiters: [
          {
            store: redisStore({ client: dead }),
            policies: fixedWindow({ limit: 5, window: '1m', name: 'per-minute' }),
            onStoreError: memoryStore(),
          },
        ],
      });
      const res = await request(url).get('/');
      expect(res.status).toBe(200);
      expect(res.body.rateLimit).toMatchObject({ reason: 'fallback' });
      expect(namedItems(res.headers['ratelimit-policy'])).toEqual({
        'per-minute': { q: 5, w: 60 },
      });
    });
  });
});

describe('what RateLimit-Policy advertises for each algorithm (the README table)', () => {
  const cases: [string, Policy, number, number][] = [
    ['fixedWindow', fixedWindow({ limit: 100, window: '1m', name: 'p' }), 100, 60],
    ['slidingLog', slidingLog({ limit: 100, window: '1m', name: 'p' }), 100, 60],
    ['slidingWindow', slidingWindow({ limit: 100, window: '1m', name: 'p' }), 100, 60],
    ['tokenBucket', tokenBucket({ limit: 10, window: '1s', burst: 50, name: 'p' }), 10, 1],
    ['gcra', gcra({ limit: 10, window: '1s', burst: 50, name: 'p' }), 10, 1],
    ['leakyBucket', leakyBucket({ limit: 10, window: '1s', burst: 5, name: 'p' }), 10, 1],
    ['smoothBursty', smoothBursty({ limit: 10, window: '1s', name: 'p' }), 10, 1],
    [
      'smoothWarmingUp',
      smoothWarmingUp({ limit: 10, window: '1s', warmup: '10s', name: 'p' }),
      10,
      1,
    ],
  ];
  it.each(cases)('%s: q is the limit option, w the window', async (_name, policy, q, w) => {
    const limiter = new RateLimiter({ store: memoryStore(), policies: policy });
    const decision = await limiter.consume('k');
    expect(decision.policies[0]!.quota).toBe(q);
    const headers = new Map<string, string>();
    applyRateLimitHeaders(
      { get: (n) => headers.get(n), set: (n, v) => void headers.set(n, v) },
      decision,
    );
    expect(namedItems(headers.get('RateLimit-Policy'))).toEqual({ p: { q, w } });
  });
});
