import { type Store, slidingWindow } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express, { type Express } from 'express';

/** Private and loopback networks (RFC 1918, RFC 4193, loopback). Use your own ranges. */
export const INTERNAL_NETWORKS = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '127.0.0.0/8',
  'fc00::/7',
  '::1',
];

/**
 * `proxyHops`: how many reverse proxies of your own stand in front of the app (0 when it faces
 * the Internet). It must be exact: one too many and a client can claim an internal address in
 * X-Forwarded-For; one too few behind a load balancer and every client looks internal (the
 * balancer's address).
 */
export function createPublicApp(store: Store, proxyHops: number): Express {
  const app = express();
  app.set('trust proxy', proxyHops);

  // Health checks are answered before the limiter: never counted, never refused, whoever asks.
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });

  app.use(
    rateLimit({
      store,
      policies: slidingWindow({ name: 'public', limit: 60, window: '1m' }),
      // Your own services are not limited (and get no rate-limit headers).
      allow: INTERNAL_NETWORKS,
    }),
  );
  app.get('/api/items', (_req, res) => {
    res.json({ items: [] });
  });
  return app;
}
