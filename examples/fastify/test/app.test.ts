import { memoryStore } from '@floodgate/core';
// @ts-expect-error — the example is plain JavaScript
import { createApp } from '../src/app.js';

describe('examples/fastify', () => {
  const app = () => createApp({ store: memoryStore({ clock: () => 1_700_000_000_000 }) });

  it('login: 5 failures lock IP + username out (even for the right password), progressively', async () => {
    let now = 1_700_000_000_000;
    const server = await createApp({ store: memoryStore({ clock: () => now }) });
    try {
      const login = (username: string, password: string) =>
        server.inject({ method: 'POST', url: '/login', payload: { username, password } });
      for (let i = 0; i < 5; i++) expect((await login('demo', 'wrong')).statusCode).toBe(401);
      const locked = await login('demo', 'demo');
      expect(locked.statusCode).toBe(429);
      expect(locked.headers['retry-after']).toBe('900');
      expect(JSON.parse(locked.body).blocked).toBe(true);
      // Another username from the same IP has its own budget.
      expect((await login('someone', 'wrong')).statusCode).toBe(401);
      now += 900_000;
      expect((await login('Demo ', 'demo')).statusCode).toBe(200);
      // The success reset the pair: five more failures before the next (first-step) lockout.
      for (let i = 0; i < 5; i++) expect((await login('demo', 'wrong')).statusCode).toBe(401);
      expect((await login('demo', 'wrong')).headers['retry-after']).toBe('900');
    } finally {
      await server.close();
    }
  });

  it('login: successes never count', async () => {
    const server = await app();
    try {
      for (let i = 0; i < 10; i++) {
        const ok = await server.inject({
          method: 'POST',
          url: '/login',
          payload: { username: 'demo', password: 'demo' },
        });
        expect(ok.statusCode).toBe(200);
      }
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

  it('behind a proxy listed in trustProxy, each client has its own login budget', async () => {
    const server = await createApp({
      store: memoryStore({ clock: () => 1_700_000_000_000 }),
      trustProxy: '127.0.0.1',
    });
    try {
      const login = (client: string) =>
        server.inject({
          method: 'POST',
          url: '/login',
          remoteAddress: '127.0.0.1',
          headers: { 'x-forwarded-for': client },
          payload: { username: 'demo', password: 'wrong' },
        });
      for (let i = 0; i < 5; i++) expect((await login('198.51.100.1')).statusCode).toBe(401);
      expect((await login('198.51.100.1')).statusCode).toBe(429);
      // Another client behind the same proxy is not locked out by the first one's failures.
      expect((await login('198.51.100.2')).statusCode).toBe(401);
    } finally {
      await server.close();
    }
  });
});
