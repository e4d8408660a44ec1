import { startRedisServer } from './redis-server';

/**
 * Starts one throwaway redis-server for the whole run unless REDIS_URL names one. Test files
 * reach it through FLOODGATE_TEST_REDIS_URL (workers inherit this process's environment) and
 * each jest worker uses its own database, so parallel files never flush each other's keys.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.REDIS_URL) {
    process.env.FLOODGATE_TEST_REDIS_URL = process.env.REDIS_URL;
    return;
  }
  const server = await startRedisServer();
  process.env.FLOODGATE_TEST_REDIS_URL = server.url;
  (globalThis as { __floodgateRedis?: typeof server }).__floodgateRedis = server;
}
