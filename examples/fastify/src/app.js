// A small API limited by one plugin registration and per-route config:
//   every route   per client IP: 100 a minute (the plugin's options; 404s count too)
//   POST /login   brute-force protection (docs/recipes.md): failed logins only, per IP (100 a
//                 day, then a day's lockout) and per IP + username (5 in 15 minutes, then a
//                 lockout of 15 minutes, 30, 60, … up to a day); a success resets the pair
//   GET /reports  per authenticated client id (stand-in auth: "Authorization: Bearer <id>"),
//                 run in preHandler, after the auth hook: 20 a minute and at most 2 in flight
//   GET /health   not limited
const { fixedWindow, RateLimiter } = require('@floodgate/core');
const { normalizeIp } = require('@floodgate/core/http');
const { rateLimit } = require('@floodgate/fastify');
const Fastify = require('fastify');

/**
 * @param {{ store: import('@floodgate/core').Store, trustProxy?: string | string[] }} options
 *   `trustProxy`: behind reverse proxies of your own, their addresses or CIDRs (e.g.
 *   '10.0.0.0/8'), so request.ip is the client. Never `true` (any client could pick its IP), and
 *   not a number: Fastify 5.12 and later ignore it and every client shares the proxy's address.
 */
async function createApp({ store, trustProxy }) {
  const app = Fastify(trustProxy === undefined ? {} : { trustProxy });

  await app.register(rateLimit, {
    store,
    prefix: 'api',
    policies: fixedWindow({ name: 'per-minute', limit: 100, window: '1m' }),
  });

  // Login: both limiters run before the password is checked, and count failures only.
  await app.register(async (login) => {
    await login.register(rateLimit, {
      store,
      prefix: 'login-ip',
      policies: fixedWindow({ name: 'login-ip', limit: 100, window: '1d', blockDuration: '1d' }),
      count: 'failed',
      notFound: false,
    });
    const perUser = new RateLimiter({
      store,
      prefix: 'login-user',
      policies: fixedWindow({
        name: 'login-user',
        limit: 5,
        window: '15m',
        blockDuration: { initial: '15m', multiplier: 2, max: '1d', forgetAfter: '1d' },
      }),
    });
    // The client as the 'ip' key sees it (IPv6 grouped by /56), plus the username.
    const loginKey = (request) =>
      `${normalizeIp(request.ip) ?? 'unknown'}:${usernameOf(request.body)}`;
    await login.register(rateLimit, {
      limiter: perUser,
      key: loginKey,
      count: 'failed',
      // After the body is parsed (the key needs the username), before the handler.
      hook: 'preValidation',
      notFound: false,
    });
    login.post('/login', async (request, reply) => {
      // Stand-in credentials: a real app compares a password hash from its user table.
      const ok = usernameOf(request.body) === 'demo' && request.body?.password === 'demo';
      if (!ok) return reply.code(401).send({ error: 'invalid username or password' });
      // A successful login forgets this IP + username's earlier failures and lockouts.
      await perUser.reset(loginKey(request));
      return { token: 'demo' };
    });
  });

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

/** The login's username, normalised so `Demo` and `demo ` share a budget. */
function usernameOf(body) {
  const username = body?.username;
  return typeof username === 'string' ? username.trim().toLowerCase().slice(0, 254) : '';
}

module.exports = { createApp };
