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

  it('limits login per IP: 1 + burst 2, then 429 with Retry-After', async () => {
    const server = app();
    try {
      const login = () => request(server).post('/login').send({ user: 'demo', password: 'demo' });
      for (let i = 0; i < 3; i++) expect((await login()).status).toBe(200);
      const denied = await login();
      expect(denied.status).toBe(429);
      expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0);
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
