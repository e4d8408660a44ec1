/**
 * `count` over every adapter (Express 4/5, Koa 2/3, Fastify) and both stores: each mode, a
 * client that disconnects before its response, an async predicate, a predicate that throws, a
 * refund the store cannot make, stacked limiters, denials and the denied cache.
 */
import http from 'node:http';
import { fixedWindow, memoryStore, redisStore, type Store } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import {
  FRAMEWORKS,
  holdRequests,
  storesOn,
  useTestApp,
  useTestRedisConnection,
} from '@floodgate/http-test-kit';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';
import { configErrorOf } from '../config-error';

type Req = { get(name: string): string | undefined };

const redis = useTestRedisConnection();

// A fixed clock, 45 s before the end of a minute: headers are exact.
const clock = () => 1_700_000_055_000;
const stores = storesOn(clock, redis);

/** `store` whose refunds fail (everything else is the store's own). */
function failingRefunds(store: Store): Store {
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name !== 'prepare') return Reflect.get(target, name, receiver);
      return (...args: Parameters<Store['prepare']>) =>
        new Proxy(target.prepare(...args), {
          get(prepared, member, r) {
            if (member === 'refund') return () => Promise.reject(new Error('refund failed'));
            return Reflect.get(prepared, member, r);
          },
        });
    },
  });
}

/** Polls `probe` (bounded: about 2 s) until it answers `expected`; returns the last answer. */
async function eventually<T>(probe: () => Promise<T>, expected: T): Promise<T> {
  let last = await probe();
  for (let i = 0; i < 100 && last !== expected; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    last = await probe();
  }
  return last;
}

/** The status a `count` function sees: Express/Fastify `statusCode`, Koa's `response.status`. */
const statusOf = (res: unknown) =>
  (res as { statusCode?: number }).statusCode ?? (res as { status: number }).status;

const perMinute = (limit: number, name = 'per-minute') =>
  fixedWindow({ limit, window: '1m', name });

describe.each(FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  describe.each(stores)('on the %s store', (storeName, makeStore) => {
    let store: Store;
    beforeEach(async () => {
      if (storeName === 'redis') await flushRedis(redis());
      store = makeStore();
    });
    const get = (url: string, status?: number) =>
      request(url).get(status === undefined ? '/' : `/?status=${status}`);

    it("'failed': successes are refunded after the response, failures count", async () => {
      const url = await start({ limiters: [{ store, policies: perMinute(2), count: 'failed' }] });
      for (let i = 0; i < 3; i++) {
        const ok = await get(url, 200);
        expect(ok.status).toBe(200);
        // Charged up front (the headers say so), given back once the response was sent.
        expect(ok.headers.ratelimit).toBe('"per-minute";r=1;t=45');
      }
      expect((await get(url, 302)).headers.ratelimit).toBe('"per-minute";r=1;t=45');
      expect((await get(url, 401)).status).toBe(401);
      expect((await get(url, 500)).headers.ratelimit).toBe('"per-minute";r=0;t=45');
      expect((await get(url, 200)).status).toBe(429);
    });

    it("'succeeded': failures are refunded, successes count; a denial refunds nothing", async () => {
      const url = await start({
        limiters: [{ store, policies: perMinute(1), count: 'succeeded' }],
      });
      for (const status of [404, 400, 503]) expect((await get(url, status)).status).toBe(status);
      expect((await get(url, 201)).status).toBe(201);
      // The 429 is a failure, but it charged nothing: giving a unit back would undo the 201.
      for (let i = 0; i < 3; i++) expect((await get(url, 201)).status).toBe(429);
    });

    it("'all' (the default) counts every outcome", async () => {
      const url = await start({ limiters: [{ store, policies: perMinute(2) }] });
      expect((await get(url, 200)).status).toBe(200);
      expect((await get(url, 404)).status).toBe(404);
      expect((await get(url, 200)).status).toBe(429);
    });

    it.each([
      ['failed', 429],
      ['succeeded', 200],
    ] as const)(
      "a client that disconnects before its response: '%s' → next request %i",
      async (count, next) => {
        let socketClosed!: Promise<void>;
        let reached!: () => void;
        const inHandler = new Promise<void>((resolve) => {
          reached = resolve;
        });
        const url = await start({
          onHold: (_finish, req) => {
            const raw = req as { raw?: http.IncomingMessage; req?: http.IncomingMessage };
            const socket = (raw.raw ?? raw.req ?? (req as http.IncomingMessage)).socket;
            socketClosed = new Promise((resolve) => socket.once('close', () => resolve()));
            reached();
          },
          limiters: [{ store, policies: perMinute(1), count }],
        });
        const aborted = http.get(`${url}/hold`);
        aborted.on('error', () => undefined);
        await inHandler;
        aborted.destroy();
        // The handler never answers: only the closed connection settles the request.
        await socketClosed;
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(await eventually(async () => (await get(url)).status, next)).toBe(next);
        expect((await get(url)).status).toBe(429);
      },
    );

    it('a count function is not asked about a client that disconnects: the request counts', async () => {
      // Its status is only the framework's default (200 in Express and Fastify), so a function
      // meant as "failures only" (`status >= 400`) would refund every aborted attempt.
      let socketClosed!: Promise<void>;
      let reached!: () => void;
      const inHandler = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const seen: number[] = [];
      const url = await start({
        onHold: (_finish, req) => {
          const raw = req as { raw?: http.IncomingMessage; req?: http.IncomingMessage };
          const socket = (raw.raw ?? raw.req ?? (req as http.IncomingMessage)).socket;
          socketClosed = new Promise((resolve) => socket.once('close', () => resolve()));
          reached();
        },
        limiters: [
          {
            store,
            policies: perMinute(1),
            count: (_req: Req, res: unknown) => {
              seen.push(statusOf(res));
              return statusOf(res) >= 400;
            },
          },
        ],
      });
      const aborted = http.get(`${url}/hold`);
      aborted.on('error', () => undefined);
      await inHandler;
      aborted.destroy();
      await socketClosed;
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await get(url)).status).toBe(429);
      expect(seen).toEqual([]);
    });

    it('a refund whose fixed window has ended is dropped: the next window never gets it', async () => {
      // As express-rate-limit (no decrement once resetTime passed): a success charged in one
      // window and answered in the next would otherwise give the next window a unit it never
      // charged, and an attacker holding slow successes across the edge doubles its failures.
      let now = 1_700_000_155_000; // 5 s before the end of a minute
      const moving =
        storeName === 'redis'
          ? redisStore({ client: redis(), clock: () => now })
          : memoryStore({ clock: () => now });
      const hold = holdRequests();
      const url = await start({
        onHold: hold.onHold,
        limiters: [{ store: moving, policies: perMinute(2), count: 'failed' }],
      });
      const held = request(url)
        .get('/hold')
        .then((res) => res.status);
      await hold.reached;
      now += 10_000; // the next minute
      expect((await get(url, 401)).status).toBe(401);
      expect((await get(url, 401)).status).toBe(401);
      hold.finish();
      expect(await held).toBe(200);
      expect((await get(url, 401)).status).toBe(429);
    });

    it('an async predicate sees the final status; false refunds', async () => {
      const seen: number[] = [];
      const url = await start({
        limiters: [
          {
            store,
            policies: perMinute(1),
            count: async (req: Req, res: unknown) => {
              await new Promise((resolve) => setTimeout(resolve, 5));
              seen.push(statusOf(res));
              return statusOf(res) !== 409 && !req.get('x-free');
            },
          },
        ],
      });
      expect((await get(url, 409)).status).toBe(409);
      expect((await get(url, 200).set('X-Free', '1')).status).toBe(200);
      expect((await get(url, 200)).status).toBe(200);
      expect((await get(url, 200)).status).toBe(429);
      expect(seen).toEqual([409, 200, 200]);
    });

    it('a predicate that throws or rejects: the request counts, one FLOODGATE_HOOK_ERROR warning', async () => {
      const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
      try {
        let calls = 0;
        const url = await start({
          limiters: [
            {
              store,
              policies: perMinute(2),
              count: (req: Req) => {
                calls++;
                if (req.get('x-async')) return Promise.reject(new Error('count rejected'));
                throw new Error('count threw');
              },
            },
          ],
        });
        expect((await get(url, 200)).status).toBe(200);
        expect((await get(url, 200).set('X-Async', '1')).status).toBe(200);
        expect((await get(url, 200)).status).toBe(429);
        expect(calls).toBe(2);
        const codes = warn.mock.calls.map((c) => (c[1] as { code?: string } | undefined)?.code);
        expect(codes.filter((code) => code === 'FLOODGATE_HOOK_ERROR')).toHaveLength(1);
        expect(String(warn.mock.calls[0]![0])).toContain('rateLimit.count threw or rejected');
      } finally {
        warn.mockRestore();
      }
    });

    it('a refund the store cannot make never breaks the response (the request stays counted)', async () => {
      const url = await start({
        limiters: [{ store: failingRefunds(store), policies: perMinute(1), count: 'failed' }],
      });
      const ok = await get(url, 200);
      expect(ok.status).toBe(200);
      expect(ok.body.rateLimit).toMatchObject({ allowed: true, remaining: 0 });
      expect((await get(url, 200)).status).toBe(429);
    });

    it('stacked limiters each refund their own charge', async () => {
      const url = await start({
        limiters: [
          { store, prefix: 'failures', policies: perMinute(3, 'failures'), count: 'failed' },
          { store, prefix: 'successes', policies: perMinute(3, 'successes'), count: 'succeeded' },
          { store, prefix: 'all', policies: perMinute(3, 'all') },
        ],
      });
      const header = async (status: number) => (await get(url, status)).headers.ratelimit;
      expect(await header(200)).toBe('"failures";r=2;t=45, "successes";r=2;t=45, "all";r=2;t=45');
      expect(await header(404)).toBe('"failures";r=2;t=45, "successes";r=1;t=45, "all";r=1;t=45');
      expect(await header(200)).toBe('"failures";r=1;t=45, "successes";r=1;t=45, "all";r=0;t=45');
    });

    it('a request refused for concurrency charged nothing, so nothing is refunded', async () => {
      const hold = holdRequests();
      const url = await start({
        onHold: hold.onHold,
        limiters: [
          { store, policies: perMinute(2), concurrency: { limit: 1 }, count: 'succeeded' },
        ],
      });
      const held = request(url)
        .get('/hold')
        .then((res) => res);
      await hold.reached;
      const busy = await get(url);
      expect(busy.status).toBe(429);
      expect(busy.headers.ratelimit).toMatch(/^"per-minute";r=1;t=45, /);
      hold.finish();
      expect((await held).status).toBe(200);
      // Had the 429 been refunded, the held request's unit would be back (r=1 after this one).
      expect((await get(url)).headers.ratelimit).toMatch(/^"per-minute";r=0;t=45, /);
    });

    it('a refund reaches past the denied cache: a key denied while a request was in flight', async () => {
      const hold = holdRequests();
      const url = await start({
        onHold: hold.onHold,
        limiters: [{ store, policies: perMinute(1), count: 'failed' }],
      });
      const held = request(url)
        .get('/hold')
        .then((res) => res);
      await hold.reached;
      expect((await get(url)).status).toBe(429);
      hold.finish();
      expect((await held).status).toBe(200);
      // The 200 was refunded: the key is admitted again at once, whatever was cached.
      expect((await get(url, 401)).status).toBe(401);
      expect((await get(url)).status).toBe(429);
    });
  });
});

describe('count configuration', () => {
  it.each([
    [{ count: 'failures' }, 'rateLimit.count'],
    [{ count: true }, 'rateLimit.count'],
  ])('%j is refused at construction', (option, field) => {
    const error = configErrorOf(() => rateLimit({ policies: perMinute(1), ...(option as object) }));
    expect(error.field).toBe(field);
  });

  it('count needs policies to refund', () => {
    const error = configErrorOf(() => rateLimit({ concurrency: { limit: 1 }, count: 'failed' }));
    expect(error.field).toBe('rateLimit.count');
  });
});
