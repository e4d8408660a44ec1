import type { RedisServerHandle } from './redis-server';

export default async function globalTeardown(): Promise<void> {
  const server = (globalThis as { __floodgateRedis?: RedisServerHandle }).__floodgateRedis;
  await server?.stop();
}
