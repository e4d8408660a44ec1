// A small API with three limits, each keyed differently:
//   /devices/*   per appKey (X-App-Key header or ?appKey=): a burst of 10, refilled at 5/s,
//                and at most 1000 an hour; only issued app keys count, others get a 403
//   POST /login  brute-force protection (docs/recipes.md): failed logins only, per IP (100 a
//                day, then a day's lockout) and per IP + username (5 in 15 minutes, then a
//                lockout of 15 minutes, 30, 60, … up to a day); a success resets the pair
//   /reports     per authenticated client id (stand-in auth: "Authorization: Bearer <id>"):
//                20 a minute and at most 2 in flight
import { fixedWindow, RateLimiter, tokenBucket } from '@floodgate/core';
import { normalizeIp } from '@floodgate/core/http';
import { rateLimit } from '@floodgate/express';
import express from 'express';

/** App keys this API has issued (a real app looks them up in its database). */
export const ISSUED_APP_KEYS = new Set(['my-app', 'app-a', 'app-b']);

/**
 * @param {{ store: import('@floodgate/core').Store, appKeys?: ReadonlySet<string> }} options
 */
export function createApp({ store, appKeys = ISSUED_APP_KEYS }) {
  const app = express();
  // Behind N reverse proxies of your own, trust exactly N hops so req.ip is the client:
  // app.set('trust proxy', 1). Never `true`: any client could then forge its IP.
  app.use(express.json({ limit: '100kb' }));

  // Stand-in authentication: a real app would verify a token and load the principal.
  app.use((req, _res, next) => {
    const token = req.get('authorization')?.match(/^Bearer (\S+)$/)?.[1];
    if (token) req.user = { id: token };
    next();
  });

  const devices = express.Router();
  devices.use(
    rateLimit({
      store,
      prefix: 'devices',
      key: 'appKey',
      // A client picks its X-App-Key freely: only keys you issued get a budget of their own.
      verifyAppKey: (appKey) => appKeys.has(appKey),
      unknownAppKey: 'refuse',
      policies: [
        tokenBucket({ name: 'device-burst', limit: 5, window: '1s', burst: 10 }),
        fixedWindow({ name: 'device-hourly', limit: 1000, window: '1h' }),
      ],
    }),
  );
  devices.get('/', (req, res) => {
    res.json({
      devices: [{ id: 'thermostat-1' }, { id: 'door-2' }],
      remaining: req.rateLimit?.remaining,
    });
  });
  devices.post('/:id/ping', (req, res) => {
    res.json({ id: req.params.id, pong: true });
  });
  app.use('/devices', devices);

  // Login: both limiters run before the password is checked, and count failures only.
  const loginPerIp = rateLimit({
    store,
    prefix: 'login-ip',
    policies: fixedWindow({ name: 'login-ip', limit: 100, window: '1d', blockDuration: '1d' }),
    count: 'failed',
  });
  const loginPerUser = new RateLimiter({
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
  const loginKey = (req) => `${normalizeIp(req.ip) ?? 'unknown'}:${usernameOf(req)}`;
  app.post(
    '/login',
    loginPerIp,
    rateLimit({ limiter: loginPerUser, key: loginKey, count: 'failed' }),
    async (req, res, next) => {
      try {
        // Stand-in credentials: a real app compares a password hash from its user table.
        const ok = usernameOf(req) === 'demo' && req.body?.password === 'demo';
        if (!ok) return res.status(401).json({ error: 'invalid username or password' });
        // A successful login forgets this IP + username's earlier failures and lockouts.
        await loginPerUser.reset(loginKey(req));
        res.json({ token: 'demo' });
      } catch (error) {
        next(error);
      }
    },
  );

  const requireAuth = (req, res, next) => {
    if (req.user) return next();
    res.status(401).json({ error: 'send Authorization: Bearer <client id>' });
  };
  app.get(
    '/reports',
    requireAuth,
    rateLimit({
      store,
      prefix: 'reports',
      key: 'clientId',
      policies: fixedWindow({ name: 'reports', limit: 20, window: '1m' }),
      // Reports are expensive: at most 2 in flight per client (freed when the response ends).
      concurrency: { limit: 2, leaseTtl: '30s' },
    }),
    (req, res) => {
      res.json({ client: req.user.id, reports: [] });
    },
  );

  app.get('/health', (_req, res) => res.json({ ok: true }));
  return app;
}

/** The login's username, normalised so `Demo` and `demo ` share a budget. */
function usernameOf(req) {
  const username = req.body?.username;
  return typeof username === 'string' ? username.trim().toLowerCase().slice(0, 254) : '';
}
