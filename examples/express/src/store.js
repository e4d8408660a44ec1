// The store: Redis when REDIS_URL is set (every instance of the app shares the limits),
// otherwise the in-memory store (one process).
import { memoryStore, redisStore } from '@floodgate/core';
import { Redis } from 'ioredis';

/** @returns {{ store: import('@floodgate/core').Store, close: () => Promise<void>, description: string }} */
export function createStore() {
  const url = process.env.REDIS_URL;
  if (!url) return { store: memoryStore(), close: async () => {}, description: 'memory store' };
  // docs/reliability.md: no offline queue and no retries, so while Redis is down calls fail fast
  // and the limiter's onStoreError answers; and always an 'error' listener.
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  client.on('error', (error) => console.error(`redis: ${error.message}`));
  return {
    store: redisStore({ client }),
    close: async () => {
      await client.quit().catch(() => client.disconnect());
    },
    description: `Redis at ${url}`,
  };
}
