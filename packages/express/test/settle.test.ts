/**
 * `cost: { estimate, actual }` on Express: the actual cost from a response header, from a trailer
 * at the end of a stream (settled when the stream ends), and a header that holds no cost.
 */
import type http from 'node:http';
import {
  RateLimiter as Limiter,
  memoryStore,
  type RateLimiter,
  tokenBucket,
} from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express from 'express';
import request from 'supertest';

// A frozen clock: nothing refills, so every unit charged stays visible.
const clock = () => 1_700_000_055_000;

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

describe('cost.actual on Express', () => {
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
});
