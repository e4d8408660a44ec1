import { fixedWindow, RateLimiter, type Store } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express, { type Express } from 'express';

/**
 * A partner API whose contract allows `perMinute` calls a minute in all, whichever of your app
 * servers makes them: one key for everyone, whose units each server leases in blocks (one
 * Redis call per block instead of one per request) and never spends past the minute that
 * charged them, so the servers together never pass the limit. Call `close()` on shutdown: it
 * stops leasing (units left in a block are freed when their minute ends).
 */
export function createGlobalQuotaApp(
  store: Store,
  perMinute = 6000,
): { app: Express; close(): Promise<void> } {
  const partnerQuota = new RateLimiter({
    store,
    prefix: 'partner',
    policies: fixedWindow({ name: 'partner-api', limit: perMinute, window: '1m' }),
    // Blocks of 10 to 200 units, sized by this server's demand: at most 200 units per server
    // sit unspent while another is refused.
    lease: { units: { min: 10, max: 200 }, ttl: '1s' },
    // Over the contract is worse than a failed call: no Redis, no partner call.
    onStoreError: 'closed',
  });
  const app = express();
  app.use('/partner', rateLimit({ limiter: partnerQuota, key: () => 'everyone' }));
  app.get('/partner/quote', (_req, res) => {
    res.json({ quote: 42 });
  });
  return { app, close: () => partnerQuota.close() };
}
