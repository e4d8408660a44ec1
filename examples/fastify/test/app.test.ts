import { memoryStore } from '@floodgate/core';
// @ts-expect-error — the example is plain JavaScript
import { createApp } from '../src/app.js';

describe('examples/fastify', () => {
  const app = () => createApp({ store: memoryStore({ clock: () => 1_700_000_000_000 }) });

  it('limits login per IP: 1 + burst 2, then 429 with Retry-After', async () => {
    const server = await app();
    try {
      const login = () =>
        server.inject({
          method: 'POST',
          url: '/login',
          payload: { user: 'demo', password: 'demo' },
        });
      for (let i = 0; i < 3; i++) expect((await login()).statusCode).toBe(200);
      const denied = await login();
      expect(denied.statusCode).toBe(429);
      expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });

  it('limits reports per client id after the auth hook, with the API-wide limit too', async () => {
    const server = await app();
    try {
      expect((await server.inject('/reports')).statusCode).toBe(401);
      const res = await server.inject({ url: '/reports', headers: { authorization: 'Bearer c1' } });
      expect(res.statusCode).toBe(200);
      // The 401 above was answered by the auth hook, before the route's limiters ran.
      expect(res.headers.ratelimit).toBe(
        '"per-minute";r=99;t=40, "reports";r=19;t=40, "concurrency-2";r=1;t=30',
      );
    } finally {
      await server.close();
    }
  });

  it('the health route is not limited; other routes and 404s count per IP', async () => {
    const server = await app();
    try {
      const health = await server.inject('/health');
      expect([health.statusCode, health.headers.ratelimit]).toEqual([200, undefined]);
      const missing = await server.inject('/nowhere');
      expect([missing.statusCode, missing.headers.ratelimit]).toEqual([
        404,
        '"per-minute";r=99;t=40',
      ]);
    } finally {
      await server.close();
    }
  });
});
