import { fixedWindow, RateLimiter, redisStore } from '@floodgate/core';
import { Redis } from 'ioredis';

/**
 * One invocation of a short-lived process (a cron job, a serverless handler, a CLI): it opens
 * its Redis connection, decides once, does the work if admitted and closes the connection.
 * Answers whether the work ran.
 */
export async function runOnce(
  redisUrl: string,
  tenant: string,
  work: () => Promise<void>,
): Promise<'ran' | 'limited'> {
  // Fail-fast settings: no offline queue, no retries. The store waits for this client's first
  // `ready` (at most `timeout`), so the decision made right after connecting is counted.
  const client = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  client.on('error', () => undefined); // reported by the limiter (FLOODGATE_STORE_UNAVAILABLE)
  try {
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: fixedWindow({ name: 'exports', limit: 10, window: '1h' }),
      // Covers connecting and deciding: a cold start's connect takes longer than one decision.
      timeout: '2s',
      // A job that must not run unlimited: no Redis, no run (the next invocation tries again).
      onStoreError: 'closed',
    });
    const decision = await limiter.consume(tenant);
    if (!decision.allowed) return 'limited';
    await work();
    return 'ran';
  } finally {
    // Every decision was awaited above: nothing is pending when the connection closes. (quit()
    // refuses on a connection that never opened: then just stop reconnecting.)
    await client.quit().catch(() => client.disconnect());
  }
}
