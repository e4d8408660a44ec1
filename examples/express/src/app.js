// A small API with three limits, each keyed differently:
//   /devices/*   per appKey (X-App-Key header or ?appKey=): a burst of 10, refilled at 5/s,
//                and at most 1000 an hour; only issued app keys count, others get a 403
//   POST /login  per client IP: nginx-style leaky bucket, 5 a minute with a burst of 2
//   /reports     per authenticated client id (stand-in auth: "Authorization: Bearer <id>"):
//                20 a minute and at most 2 in flight
import { fixedWindow, leakyBucket, tokenBucket } from '@floodgate/core';
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
  app.use(express.json());

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

  app.post(
    '/login',
    rateLimit({
      store,
      prefix: 'login',
      key: 'ip',
      policies: leakyBucket({ name: 'login', limit: 5, window: '1m', burst: 2 }),
    }),
    (req, res) => {
      const ok = req.body?.user === 'demo' && req.body?.password === 'demo';
      res.status(ok ? 200 : 401).json(ok ? { token: 'demo' } : { error: 'invalid credentials' });
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
