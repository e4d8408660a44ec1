// The store: Redis when REDIS_URL is set (every instance of the app shares the limits),
// otherwise the in-memory store (one process).
const { memoryStore, redisStore } = require('@floodgate/core');
const { Redis } = require('ioredis');

/** @returns {{ store: import('@floodgate/core').Store, close: () => Promise<void>, description: string }} */
function createStore() {
  const url = process.env.REDIS_URL;
  if (!url) return { store: memoryStore(), close: async () => {}, description: 'memory store' };
  // No offline queue: when Redis is down, calls fail fast and the limiter's onStoreError answers.
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  return {
    store: redisStore({ client }),
    close: async () => {
      await client.quit().catch(() => client.disconnect());
    },
    description: `Redis at ${url}`,
  };
}

module.exports = { createStore };
