/**
 * One table of HTTP scenarios, run against real servers and every store (memory, Redis on the
 * harness server). Each adapter's own tests call `describeHttpScenarios` with its frameworks, so
 * the same table runs once per adapter, as @nestjs/throttler runs its e2e suite per platform.
 * Functions in options receive the framework's request (Express `req`, Koa `ctx`, Fastify
 * `request`); all have `.get(header)` and `.path` (the Fastify driver decorates its requests
 * with them).
 */

import http from 'node:http';
import { fixedWindow, leakyBucket, memoryStore, redisStore, type Store } from '@floodgate/core';
import { QUOTA_EXCEEDED_TYPE, STORE_UNAVAILABLE_TYPE } from '@floodgate/core/http';
import { Redis as IORedis, type Redis } from 'ioredis';
import request from 'supertest';
import { flushRedis } from '../../../test/harness/redis';
import { holdRequests, type Serve, useTestApp } from './driver';
import { httpStores, useTestRedisConnection } from './tables';

type Req = { get(name: string): string | undefined; path: string };

// Aligned to a minute, so a fixed window of 1m has exactly 45s left at T0.
const WINDOW_START = 1_700_000_040_000;
const T0 = WINDOW_START + 15_000;

/** Polls `probe` (bounded: about 2 s) until it answers `expected`; returns the last answer. */
async function eventually<T>(probe: () => Promise<T>, expected: T): Promise<T> {
  let last = await probe();
  for (let i = 0; i < 100 && last !== expected; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    last = await probe();
  }
  return last;
}

/** Registers the scenario table for each `[name, serve]` row, on the memory and the Redis store. */
export function describeHttpScenarios(frameworks: readonly [string, Serve][]): void {
  const redis = useTestRedisConnection();
  const stores = httpStores(redis);

  describe.each(frameworks)('%s', (_framework, serve) => {
    const { start, close } = useTestApp(serve);

    describe.each(stores)('on the %s store', (storeName, makeStore) => {
      let now = T0;
      const clock = () => now;
      let store: Store;
      beforeEach(async () => {
        now = T0;
        if (storeName === 'redis') await flushRedis(redis());
        store = makeStore(clock);
      });
      const perMinute = (limit: number, name = 'per-minute') =>
        fixedWindow({ limit, window: '1m', name });

      it('limit reached: 429 with exact headers and a problem+json body', async () => {
        const url = await start({ limiters: [{ store, policies: perMinute(2) }] });
        const first = await request(url).get('/');
        expect(first.status).toBe(200);
        expect(first.headers['ratelimit-policy']).toBe('"per-minute";q=2;w=60');
        expect(first.headers.ratelimit).toBe('"per-minute";r=1;t=45');
        expect(first.headers['retry-after']).toBeUndefined();
        expect(first.body.rateLimit).toMatchObject({ allowed: true, remaining: 1, limit: 2 });
        expect((await request(url).get('/')).headers.ratelimit).toBe('"per-minute";r=0;t=45');

        const denied = await request(url).get('/');
        expect(denied.status).toBe(429);
        expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(denied.headers['ratelimit-policy']).toBe('"per-minute";q=2;w=60');
        expect(denied.headers.ratelimit).toBe('"per-minute";r=0;t=45');
        expect(denied.headers['retry-after']).toBe('45');
        expect(JSON.parse(denied.text)).toEqual({
          type: QUOTA_EXCEEDED_TYPE,
          title: 'Quota Exceeded',
          status: 429,
          detail: 'Too many requests under policy "per-minute"; retry in 45 s.',
          'violated-policies': ['per-minute'],
        });
        expect(denied.headers['x-ratelimit-limit']).toBeUndefined();

        now = WINDOW_START + 60_000;
        expect((await request(url).get('/')).status).toBe(200);
      });

      it('headers follow the draft syntax: one item per policy, stacked limiters append', async () => {
        const url = await start({
          limiters: [
            {
              store,
              policies: [
                perMinute(5, 'burst'),
                fixedWindow({ limit: 100, window: '1h', name: 'hourly' }),
              ],
            },
            { store, prefix: 'second', policies: perMinute(3, 'route') },
          ],
        });
        const res = await request(url).get('/');
        const policyItem = /^"[!#-[\]-~]*"(;[a-z][a-z0-9_.*-]*=\d{1,15})+$/;
        const policyList = res.headers['ratelimit-policy'] as string;
        const list = res.headers.ratelimit as string;
        for (const item of policyList.split(', ')) expect(item).toMatch(policyItem);
        for (const item of list.split(', ')) expect(item).toMatch(policyItem);
        expect(policyList).toBe('"burst";q=5;w=60, "hourly";q=100;w=3600, "route";q=3;w=60');
        expect(list).toBe('"burst";r=4;t=45, "hourly";r=99;t=2745, "route";r=2;t=45');
      });

      it('header groups are switchable; legacy headers carry limit, remaining, epoch reset', async () => {
        const url = await start({
          limiters: [{ store, policies: perMinute(1), headers: { standard: false, legacy: true } }],
        });
        const res = await request(url).get('/');
        expect(res.headers.ratelimit).toBeUndefined();
        expect(res.headers['ratelimit-policy']).toBeUndefined();
        expect(res.headers['x-ratelimit-limit']).toBe('1');
        expect(res.headers['x-ratelimit-remaining']).toBe('0');
        const reset = Number(res.headers['x-ratelimit-reset']);
        expect(reset).toBeGreaterThan(Date.now() / 1000);
        expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 46);
        const denied = await request(url).get('/');
        expect(denied.status).toBe(429);
        expect(denied.headers['retry-after']).toBe('45');

        await close();
        const quiet = await start({
          limiters: [{ store, prefix: 'quiet', policies: perMinute(1), headers: false }],
        });
        await request(quiet).get('/');
        const silent = await request(quiet).get('/');
        expect(silent.status).toBe(429);
        for (const name of ['ratelimit', 'ratelimit-policy', 'retry-after', 'x-ratelimit-limit']) {
          expect(silent.headers[name]).toBeUndefined();
        }
      });

      // The warning it gives (once per process) is tested in core's test/http/untrusted-proxy-warning.test.ts.
      it('without a trusted proxy, X-Forwarded-For is ignored', async () => {
        const url = await start({ limiters: [{ store, policies: perMinute(1), validate: false }] });
        const a = await request(url).get('/').set('X-Forwarded-For', '198.51.100.1');
        const b = await request(url).get('/').set('X-Forwarded-For', '198.51.100.2');
        expect([a.status, b.status]).toEqual([200, 429]);
      });

      it('behind a trusted proxy: per client, IPv4-mapped folded, IPv6 grouped by /56', async () => {
        const url = await start({ trustProxy: 1, limiters: [{ store, policies: perMinute(1) }] });
        const from = (ip: string) => request(url).get('/').set('X-Forwarded-For', ip);
        expect((await from('198.51.100.1')).status).toBe(200);
        expect((await from('198.51.100.2')).status).toBe(200);
        expect((await from('::ffff:198.51.100.1')).status).toBe(429);
        expect((await from('2001:db8:0:1::1')).status).toBe(200);
        expect((await from('2001:db8:0:ff::2')).status).toBe(429);
        expect((await from('2001:db8:0:100::1')).status).toBe(200);
      });

      it('ipv6Subnet changes the grouping', async () => {
        const url = await start({
          trustProxy: 1,
          limiters: [{ store, policies: perMinute(1), ipv6Subnet: 64 }],
        });
        const from = (ip: string) => request(url).get('/').set('X-Forwarded-For', ip);
        expect((await from('2001:db8:0:1::1')).status).toBe(200);
        expect((await from('2001:db8:0:2::1')).status).toBe(200);
        expect((await from('2001:db8:0:1:ffff::9')).status).toBe(429);
      });

      it('appKey and clientId keys; requests with no key share the fallback bucket', async () => {
        const url = await start({
          trustProxy: 1,
          limiters: [
            {
              store,
              policies: perMinute(1),
              key: ['clientId', 'appKey'],
              verifyAppKey: (appKey: string) => appKey.startsWith('device-'),
            },
          ],
        });
        const get = () =>
          request(url)
            .get('/')
            .set('X-Forwarded-For', `198.51.100.${Math.floor(Math.random() * 250)}`);
        expect((await get().set('x-app-key', 'device-1')).status).toBe(200);
        expect((await get().set('x-app-key', 'device-1')).status).toBe(429);
        expect((await request(url).get('/?appKey=device-2')).status).toBe(200);
        expect((await get().set('authorization', 'Bearer alice')).status).toBe(200);
        expect(
          (await get().set('authorization', 'Bearer alice').set('x-app-key', 'device-3')).status,
        ).toBe(429);
        expect((await get().set('x-app-key', 'device-3')).status).toBe(200);
        // No clientId, no appKey: one shared bucket, whatever the address.
        expect((await request(url).get('/').set('X-Forwarded-For', '203.0.113.1')).status).toBe(
          200,
        );
        expect((await request(url).get('/').set('X-Forwarded-For', '203.0.113.2')).status).toBe(
          429,
        );
      });

      it('skip: skipped requests are not counted and get no headers', async () => {
        const url = await start({
          limiters: [{ store, policies: perMinute(1), skip: (req: Req) => req.path === '/health' }],
        });
        for (let i = 0; i < 3; i++) {
          const res = await request(url).get('/health');
          expect(res.status).toBe(200);
          expect(res.headers.ratelimit).toBeUndefined();
          expect(res.body.rateLimit).toBeNull();
        }
        expect((await request(url).get('/')).status).toBe(200);
        expect((await request(url).get('/')).status).toBe(429);
      });

      it('cost: a number or a function of the request', async () => {
        const url = await start({
          limiters: [
            { store, policies: perMinute(5), cost: (req: Req) => Number(req.get('x-cost') ?? 1) },
          ],
        });
        const spend = (cost: number) => request(url).get('/').set('x-cost', String(cost));
        expect((await spend(3)).headers.ratelimit).toBe('"per-minute";r=2;t=45');
        expect((await spend(3)).status).toBe(429);
        expect((await spend(2)).headers.ratelimit).toBe('"per-minute";r=0;t=45');
        await close();
        const fixed = await start({
          limiters: [{ store, prefix: 'fixed', policies: perMinute(5), cost: 5 }],
        });
        expect((await request(fixed).get('/')).status).toBe(200);
        expect((await request(fixed).get('/')).status).toBe(429);
      });

      it('a cost that can never be admitted says so', async () => {
        const url = await start({ limiters: [{ store, policies: perMinute(2), cost: 3 }] });
        const res = await request(url).get('/');
        expect(res.status).toBe(429);
        expect(JSON.parse(res.text).detail).toBe(
          'Policy "per-minute" can never admit this request; retrying will not help.',
        );
        expect(res.headers['retry-after']).toBeUndefined();
      });

      it('a custom onLimited handler replaces the 429 body; headers are already set', async () => {
        const onLimited = (...args: unknown[]) => {
          const decision = args[args.length - 1] as { retryAfter: number };
          const target = args[0] as { res?: unknown; status?: number; body?: unknown };
          const reply = args[1] as { code?(n: number): { send(b: unknown): void } };
          if (args.length === 3 && typeof reply.code === 'function') {
            // Fastify: (request, reply, decision)
            reply.code(503).send({ custom: true, retryAfter: decision.retryAfter });
          } else if ('body' in target || 'request' in target) {
            // Koa: (ctx, next, decision)
            target.status = 503;
            target.body = { custom: true, retryAfter: decision.retryAfter };
          } else {
            // Express: (req, res, next, decision)
            (args[1] as { status(n: number): { json(b: unknown): void } })
              .status(503)
              .json({ custom: true, retryAfter: decision.retryAfter });
          }
        };
        const url = await start({ limiters: [{ store, policies: perMinute(1), onLimited }] });
        await request(url).get('/');
        const res = await request(url).get('/');
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ custom: true, retryAfter: 45_000 });
        expect(res.headers['retry-after']).toBe('45');
      });

      it('a cost function answering a negative or fractional value → error response, no crash', async () => {
        const url = await start({
          limiters: [
            { store, policies: perMinute(5), cost: (req: Req) => Number(req.get('x-cost')) },
          ],
        });
        for (const cost of ['-1', '1.5']) {
          const res = await request(url).get('/').set('x-cost', cost);
          expect(res.status).toBe(500);
          expect(res.body.error).toMatchObject({
            name: 'RateLimitArgumentError',
            argument: 'cost',
          });
        }
        expect((await request(url).get('/').set('x-cost', '1')).status).toBe(200);
      });

      it('a key function that throws → error handler, the route is not reached', async () => {
        const reached = jest.fn();
        const url = await start({
          onHandler: reached,
          limiters: [
            {
              store,
              policies: perMinute(5),
              key: () => {
                throw new Error('resolver broke');
              },
            },
          ],
        });
        const res = await request(url).get('/');
        expect(res.status).toBe(500);
        expect(res.body.error).toMatchObject({ name: 'Error', message: 'resolver broke' });
        expect(reached).not.toHaveBeenCalled();
      });

      it('a key function answering a lone surrogate (request text) is limited, not a 500', async () => {
        // What a JSON body's "\ud800", or a username sliced through an emoji, hands a key function.
        const url = await start({
          limiters: [
            { store, policies: perMinute(1), key: (req: Req) => `user:${req.get('x-half')}\ud83d` },
          ],
        });
        expect((await request(url).get('/').set('x-half', 'a')).status).toBe(200);
        // Every such key is one key with U+FFFD, as its UTF-8 form would be.
        expect((await request(url).get('/').set('x-half', 'a')).status).toBe(429);
      });

      it('shaping: an admitted decision with a delay waits that long, then continues', async () => {
        // nginx `limit_req rate=10r/s burst=3 delay=0`: every excess request leaves at the rate.
        const shaped = leakyBucket({ limit: 10, window: '1s', burst: 3, delay: 0, name: 'shaped' });
        let reachedAt = 0;
        const url = await start({
          onHandler: () => {
            reachedAt = performance.now();
          },
          limiters: [{ store, policies: shaped }],
        });
        const first = await request(url).get('/');
        expect(first.body.rateLimit.delay).toBe(0);
        const sent = performance.now();
        const second = await request(url).get('/');
        expect(second.status).toBe(200);
        expect(second.body.rateLimit).toMatchObject({ allowed: true, delay: 100 });
        expect(reachedAt - sent).toBeGreaterThanOrEqual(99);
      });
      it('concurrency: a slot is held while the response is in flight, freed when it finishes', async () => {
        const hold = holdRequests();
        const url = await start({
          onHold: hold.onHold,
          limiters: [{ store, policies: perMinute(100), concurrency: { limit: 1 } }],
        });
        const held = request(url)
          .get('/hold')
          .then((res) => res);
        await hold.reached;
        const busy = await request(url).get('/');
        expect(busy.status).toBe(429);
        expect(JSON.parse(busy.text)['violated-policies']).toEqual(['concurrency-1']);
        expect(busy.headers['ratelimit-policy']).toBe(
          '"per-minute";q=100;w=60, "concurrency-1";q=1;qu="concurrent-requests"',
        );
        expect(busy.headers.ratelimit).toMatch(
          /^"per-minute";r=99;t=45, "concurrency-1";r=0;t=\d+$/,
        );
        expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        hold.finish();
        expect((await held).status).toBe(200);
        expect(await eventually(async () => (await request(url).get('/')).status, 200)).toBe(200);
      });

      it('concurrency: a client that aborts frees its slot', async () => {
        let reached!: () => void;
        const inHandler = new Promise<void>((resolve) => {
          reached = resolve;
        });
        const url = await start({
          onHold: () => reached(),
          limiters: [{ store, concurrency: { limit: 1, leaseTtl: '10m' } }],
        });
        const aborted = http.get(`${url}/hold`);
        aborted.on('error', () => undefined);
        await inHandler;
        expect((await request(url).get('/')).status).toBe(429);
        aborted.destroy();
        // The handler never answers: only the closed connection can free the slot.
        expect(await eventually(async () => (await request(url).get('/')).status, 200)).toBe(200);
      });
    });

    describe('store errors behave as configured (Redis unreachable)', () => {
      // Port 1 on loopback: nothing listens there, so every call fails at once.
      const clients: Redis[] = [];
      const deadRedis = () => {
        const client = new IORedis({
          port: 1,
          host: '127.0.0.1',
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        clients.push(client);
        return redisStore({ client });
      };
      afterEach(() => {
        for (const client of clients.splice(0)) if (client.status !== 'end') client.disconnect();
      });
      const policies = fixedWindow({ limit: 1, window: '1m', name: 'per-minute' });

      it("'open' (the default) admits and says why", async () => {
        const url = await start({ limiters: [{ store: deadRedis(), policies }] });
        for (let i = 0; i < 3; i++) {
          const res = await request(url).get('/');
          expect(res.status).toBe(200);
          expect(res.body.rateLimit).toMatchObject({ allowed: true, reason: 'store-error' });
        }
      });

      it("'closed' denies with a 503 (the client did nothing wrong)", async () => {
        const url = await start({
          limiters: [{ store: deadRedis(), policies, onStoreError: 'closed' }],
        });
        const res = await request(url).get('/');
        expect(res.status).toBe(503);
        expect(JSON.parse(res.text).type).toBe(STORE_UNAVAILABLE_TYPE);
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      });

      it('a fallback store keeps limiting', async () => {
        const url = await start({
          limiters: [{ store: deadRedis(), policies, onStoreError: memoryStore() }],
        });
        const first = await request(url).get('/');
        expect(first.status).toBe(200);
        expect(first.body.rateLimit.reason).toBe('fallback');
        expect((await request(url).get('/')).status).toBe(429);
      });
    });

    describe('bad input is refused at construction', () => {
      const policies = fixedWindow({ limit: 1, window: '1m' });
      it.each([
        [{ policies, windowMs: 60_000 }, 'rateLimit.windowMs', 'FLOODGATE_UNKNOWN_OPTION'],
        [{ policies, key: 'session' }, 'rateLimit.key', 'FLOODGATE_INVALID_OPTION'],
        [{ policies, key: ['ip', 42] }, 'rateLimit.key[1]', 'FLOODGATE_INVALID_OPTION'],
        [{ policies, ipv6Subnet: 16 }, 'rateLimit.ipv6Subnet', 'FLOODGATE_INVALID_OPTION'],
        [{ policies, ipv6Subnet: 65 }, 'rateLimit.ipv6Subnet', 'FLOODGATE_INVALID_OPTION'],
        [{ policies, cost: -2 }, 'rateLimit.cost', 'FLOODGATE_INVALID_OPTION'],
        [{}, 'rateLimit.policies', 'FLOODGATE_NO_POLICIES'],
      ])('%p', async (options, field, code) => {
        await expect(start({ limiters: [options] })).rejects.toMatchObject({
          name: 'RateLimitConfigError',
          field,
          code,
        });
      });
    });
  });
}
