import { createHash, timingSafeEqual } from 'node:crypto';
import {
  fixedWindow,
  gcra,
  RateLimitArgumentError,
  RateLimiter,
  type Store,
} from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express, { type Express } from 'express';

export function createBanApp(store: Store, adminToken: string): Express {
  const app = express();
  // Behind N reverse proxies of your own: app.set('trust proxy', N) (never `true`).

  // The public API, limited per IP. Its keys look like `ip:203.0.113.7` (IPv6: the /56,
  // `ip:2001:db8:0:ab00::/56`): those are the keys the admin endpoint blocks.
  const api = new RateLimiter({
    store,
    prefix: 'api',
    policies: gcra({ name: 'api', limit: 10, window: '1s' }),
  });
  app.use('/api', rateLimit({ limiter: api }));
  app.get('/api/hello', (_req, res) => {
    res.json({ hello: 'world' });
  });

  const admin = express.Router();
  // The admin endpoint is a target too: 10 failed attempts an hour per IP, then a 1 h lockout,
  // counted BEFORE the token is checked (so guessing tokens is limited).
  admin.use(
    rateLimit({
      store,
      prefix: 'admin',
      policies: fixedWindow({ name: 'admin', limit: 10, window: '1h', blockDuration: '1h' }),
      count: 'failed',
    }),
  );
  admin.use((req, res, next) => {
    if (sameSecret(req.get('authorization') ?? '', `Bearer ${adminToken}`)) return next();
    res.status(401).json({ error: 'admin token required' });
  });
  admin.use(express.json({ limit: '1kb' }));

  // PUT /admin/blocks/ip:203.0.113.7  { "duration": "1h" }  (or "forever", the default)
  admin.put('/blocks/:key', async (req, res, next) => {
    try {
      await api.block(req.params.key as string, req.body?.duration ?? 'forever');
      res.status(204).end();
    } catch (error) {
      if (error instanceof RateLimitArgumentError) {
        res.status(400).json({ error: `bad ${error.argument}: ${String(error.value)}` });
      } else next(error);
    }
  });
  // DELETE /admin/blocks/ip:203.0.113.7
  admin.delete('/blocks/:key', async (req, res, next) => {
    try {
      await api.unblock(req.params.key as string);
      res.status(204).end();
    } catch (error) {
      next(error);
    }
  });
  app.use('/admin', admin);
  return app;
}

/** Compares secrets in constant time (hashes first, so the lengths may differ). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
