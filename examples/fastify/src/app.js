// A small API limited by one plugin registration and per-route config:
//   every route   per client IP: 100 a minute (the plugin's options; 404s count too)
//   POST /login   per client IP: nginx-style leaky bucket, 5 a minute with a burst of 2
//   GET /reports  per authenticated client id (stand-in auth: "Authorization: Bearer <id>"),
//                 run in preHandler, after the auth hook: 20 a minute and at most 2 in flight
//   GET /health   not limited
const { fixedWindow, leakyBucket } = require('@floodgate/core');
const { rateLimit } = require('@floodgate/fastify');
const Fastify = require('fastify');

/** @param {{ store: import('@floodgate/core').Store }} options */
async function createApp({ store }) {
  // Behind a reverse proxy, trust it so request.ip is the client: Fastify({ trustProxy: 1 })
  const app = Fastify();

  await app.register(rateLimit, {
    store,
    prefix: 'api',
    policies: fixedWindow({ name: 'per-minute', limit: 100, window: '1m' }),
  });

  app.post(
    '/login',
    {
      config: {
        rateLimit: {
          prefix: 'login',
          policies: leakyBucket({ name: 'login', limit: 5, window: '1m', burst: 2 }),
        },
      },
    },
    async (request, reply) => {
      const ok = request.body?.user === 'demo' && request.body?.password === 'demo';
      return reply
        .code(ok ? 200 : 401)
        .send(ok ? { token: 'demo' } : { error: 'invalid credentials' });
    },
  );

  // Reports: the auth hook runs first, then a limiter keyed on the client id.
  await app.register(async (reports) => {
    reports.addHook('onRequest', async (request, reply) => {
      const token = request.headers.authorization?.match(/^Bearer (\S+)$/)?.[1];
      if (!token) return reply.code(401).send({ error: 'send Authorization: Bearer <client id>' });
      request.user = { id: token };
    });
    await reports.register(rateLimit, {
      store,
      prefix: 'reports',
      hook: 'preHandler',
      key: 'clientId',
      policies: fixedWindow({ name: 'reports', limit: 20, window: '1m' }),
      // Reports are expensive: at most 2 in flight per client (freed when the reply ends).
      concurrency: { limit: 2, leaseTtl: '30s' },
      notFound: false,
    });
    reports.get('/reports', async (request) => ({ client: request.user.id, reports: [] }));
  });

  app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }));
  return app;
}

module.exports = { createApp };
