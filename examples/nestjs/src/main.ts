/**
 * `pnpm start` (in examples/nestjs): builds the packages and this app, then serves on PORT
 * (default 3000), on the memory store, or on Redis when REDIS_URL is set.
 */
import 'reflect-metadata';
import { memoryStore, redisStore, type Store } from '@floodgate/core';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { AppModule } from './app.module.js';

async function bootstrap(): Promise<void> {
  const redisUrl = process.env.REDIS_URL;
  // docs/reliability.md: fail fast while Redis is down (onStoreError answers), and always
  // listen for 'error'.
  const redis = redisUrl
    ? new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 0 })
    : undefined;
  redis?.on('error', (error) => console.error(`redis: ${error.message}`));
  const store: Store = redis ? redisStore({ client: redis }) : memoryStore();

  const app = await NestFactory.create(AppModule.register(store));
  app.enableShutdownHooks();
  if (redis) app.getHttpServer().on('close', () => void redis.quit());
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  console.log(`device API on http://localhost:${port} (store: ${store.kind})`);
  console.log(`try: curl -i -H 'Authorization: Bearer token-acme' localhost:${port}/devices`);
}

void bootstrap();
