/**
 * `cost: { estimate, actual }` over every adapter (Express 4/5, Koa 2/3, Fastify) and both
 * stores: the estimate is charged up front, the actual cost settled after the response (refund
 * below, debt above), an aborted request keeps its estimate; then, on Express, the actual cost
 * from a response header, from a trailer at the end of a stream, and the options' errors.
 */
import http from 'node:http';
import {
  fixedWindow,
  RateLimiter as Limiter,
  memoryStore,
  type RateLimiter,
  type Store,
  slidingLog,
  tokenBucket,
} from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import {
  FRAMEWORKS,
  holdRequests,
  storesOn,
  useTestApp,
  useTestRedisConnection,
} from '@floodgate/http-test-kit';
import express from 'express';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';
import { configErrorOf } from '../config-error';

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
      const t = Number(/;t=(\d+)/.exec(denied.headers.ratelimit)![1]);
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

describe('on Express', () => {
  let server: http.Server | undefined;
  afterEach(async () => {
    const open = server;
    server = undefined;
    if (open) await new Promise((resolve) => open.close(resolve));
  });
  const serveApp = (app: express.Express) =>
    new Promise<string>((resolve) => {
      server = app.listen(0, '127.0.0.1', () => {
        const { port } = server!.address() as { port: number };
        resolve(`http://127.0.0.1:${port}`);
      });
    });

  it('reads the actual cost from a response header', async () => {
    const limiter = new Limiter({
      store: memoryStore({ clock }),
      policies: tokenBucket({ limit: 100, window: '1h' }),
    });
    const app = express();
    app.use(
      rateLimit({ limiter, key: () => 'client', cost: { estimate: 10, actual: 'x-tokens-used' } }),
    );
    app.get('/', (_req, res) => {
      res.set('x-tokens-used', '42').send('ok');
    });
    const url = await serveApp(app);
    expect((await request(url).get('/')).status).toBe(200);
    expect(await eventually(remaining(limiter), 58)).toBe(58);
  });

  it('settles a stream when it ends, from a trailer', async () => {
    const limiter = new Limiter({
      store: memoryStore({ clock }),
      policies: tokenBucket({ limit: 100, window: '1h' }),
    });
    let end!: () => void;
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const app = express();
    app.use(
      rateLimit({ limiter, key: () => 'client', cost: { estimate: 10, actual: 'x-tokens-used' } }),
    );
    app.get('/events', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', trailer: 'x-tokens-used' });
      res.write('data: one\n\n');
      void ended.then(() => {
        res.addTrailers({ 'x-tokens-used': '64' });
        res.end();
      });
    });
    const url = await serveApp(app);
    const response = request(url)
      .get('/events')
      .then((r) => r);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The stream is open: the estimate is charged, nothing settled yet.
    expect(await remaining(limiter)()).toBe(90);
    end();
    expect((await response).status).toBe(200);
    expect(await eventually(remaining(limiter), 36)).toBe(36);
  });

  it('an actual cost that is not a non-negative integer keeps the estimate, reported once', async () => {
    const limiter = new Limiter({
      store: memoryStore({ clock }),
      policies: tokenBucket({ limit: 100, window: '1h' }),
    });
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const app = express();
      app.use(
        rateLimit({
          limiter,
          key: () => 'client',
          cost: { estimate: 10, actual: 'x-tokens-used' },
        }),
      );
      app.get('/', (_req, res) => {
        res.set('x-tokens-used', 'many').send('ok');
      });
      const url = await serveApp(app);
      await request(url).get('/');
      await request(url).get('/');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await remaining(limiter)()).toBe(80);
      const codes = warn.mock.calls.map((c) => (c[1] as { code?: string } | undefined)?.code);
      expect(codes.filter((code) => code === 'FLOODGATE_HOOK_ERROR')).toHaveLength(1);
    } finally {
      warn.mockRestore();
    }
  });

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
