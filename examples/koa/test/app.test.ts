import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { memoryStore } from '@floodgate/core';
import request from 'supertest';
// @ts-expect-error — the example is plain JavaScript
import { createApp } from '../src/app.js';

// The example is a correct setup: no Floodgate diagnostic may fire while it runs.
const warnings = jest.spyOn(process, 'emitWarning');
afterAll(() => {
  const codes = warnings.mock.calls.map((call) => (call[1] as { code?: string } | undefined)?.code);
  expect(codes.filter((code) => code?.startsWith('FLOODGATE_'))).toEqual([]);
  warnings.mockRestore();
});

describe('examples/koa', () => {
  const app = () =>
    createApp({ store: memoryStore({ clock: () => 1_700_000_000_000 }) }).listen(0, '127.0.0.1');

  it('limits the device API per appKey: a burst of 10, then 429', async () => {
    const server = app();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        statuses.push((await request(server).get('/devices').set('X-App-Key', 'app-a')).status);
      }
      // The store's clock stands still, so nothing refills during the burst.
      expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);
      // Another issued appKey has its own budget.
      expect((await request(server).get('/devices?appKey=app-b')).status).toBe(200);
      // A key nobody issued gets no budget of its own: refused, however many are minted.
      for (const minted of ['x1', 'x2', 'x3']) {
        const refused = await request(server).get('/devices').set('X-App-Key', minted);
        expect(refused.status).toBe(403);
      }
    } finally {
      server.close();
    }
  });

  it('login: 5 failures lock IP + username out (even for the right password), progressively', async () => {
    let now = 1_700_000_000_000;
    const server = createApp({ store: memoryStore({ clock: () => now }) }).listen(0, '127.0.0.1');
    try {
      const login = (username: string, password: string) =>
        request(server).post('/login').send({ username, password });
      for (let i = 0; i < 5; i++) expect((await login('demo', 'wrong')).status).toBe(401);
      const locked = await login('demo', 'demo');
      expect(locked.status).toBe(429);
      expect(locked.headers['retry-after']).toBe('900');
      expect(JSON.parse(locked.text).blocked).toBe(true);
      // Another username from the same IP has its own budget.
      expect((await login('someone', 'wrong')).status).toBe(401);
      now += 900_000;
      expect((await login('Demo ', 'demo')).status).toBe(200);
      // The success reset the pair: five more failures before the next (first-step) lockout.
      for (let i = 0; i < 5; i++) expect((await login('demo', 'wrong')).status).toBe(401);
      expect((await login('demo', 'wrong')).headers['retry-after']).toBe('900');
    } finally {
      server.close();
    }
  });

  it('login: a username is the same whichever way its bytes are split into chunks', async () => {
    const server = app();
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const body = Buffer.from(JSON.stringify({ username: 'dé', password: 'wrong' }));
      const cut = body.indexOf(0xc3) + 1; // inside the two bytes of 'é'
      // Each attempt's body arrives in two chunks that split 'é'.
      const splitLogin = () =>
        new Promise<number>((resolve, reject) => {
          const req = http.request(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/login',
              headers: { 'content-type': 'application/json', 'content-length': body.length },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          req.on('error', reject);
          req.write(body.subarray(0, cut));
          setTimeout(() => req.end(body.subarray(cut)), 20);
        });
      for (let i = 0; i < 5; i++) expect(await splitLogin()).toBe(401);
      // Sent whole, the same username finds its five failures: locked out.
      const whole = await request(server).post('/login').send({ username: 'dé', password: 'x' });
      expect(whole.status).toBe(429);
    } finally {
      server.close();
    }
  });

  it('login: successes never count', async () => {
    const server = app();
    try {
      for (let i = 0; i < 10; i++) {
        const ok = await request(server)
          .post('/login')
          .send({ username: 'demo', password: 'demo' });
        expect(ok.status).toBe(200);
      }
    } finally {
      server.close();
    }
  });

  it('limits reports per client id behind the stand-in auth', async () => {
    const server = app();
    try {
      expect((await request(server).get('/reports')).status).toBe(401);
      const res = await request(server).get('/reports').set('Authorization', 'Bearer c1');
      expect(res.status).toBe(200);
      expect(res.headers.ratelimit).toMatch(/^"reports";r=19;t=\d+, "concurrency-2";r=1;t=30$/);
    } finally {
      server.close();
    }
  });
});
