import { gcra, type RateLimiterHooks, type Store } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express, { type Express } from 'express';

/**
 * `enforce: false` for the first rollout stage (shadow), then `true`, e.g. from an environment
 * variable. `hooks`: your metrics, e.g. `floodgateMetrics({ limiter: 'api' }).hooks` from
 * @floodgate/opentelemetry, which counts would-be denials as outcome `shadow-denied`.
 */
export function createApiApp(store: Store, enforce: boolean, hooks: RateLimiterHooks): Express {
  const app = express();
  app.use(
    '/api',
    rateLimit({
      store,
      prefix: 'api', // the same prefix and policies in both stages: the counters carry over
      policies: gcra({ name: 'api', limit: 20, window: '1s', burst: 40 }),
      hooks,
      // Shadow: counted as if enforced, never refused, no rate-limit headers.
      shadow: !enforce,
    }),
  );

  app.get('/api/items', (_req, res) => {
    res.json({ items: [] });
  });
  return app;
}
