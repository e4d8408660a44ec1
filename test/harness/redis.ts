/**
 * Connections to the suite's Redis. Each jest worker gets its own logical database so that
 * files running in parallel never see each other's keys; `flushRedis` empties that database
 * and the script cache, so every test starts on the NOSCRIPT path.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { type RedisServerHandle, startRedisServer } from './redis-server';

export function testRedisUrl(): string {
  const url = process.env.FLOODGATE_TEST_REDIS_URL ?? process.env.REDIS_URL;
  if (!url) throw new Error('no test Redis: run through jest (global setup) or set REDIS_URL');
  return url;
}

/** Database index for this jest worker (1..15); 0 is left to whoever else uses the server. */
export function workerDb(): number {
  const worker = Number(process.env.JEST_WORKER_ID ?? '1');
  return 1 + ((worker - 1) % 15);
}

export function connectIoredis(options: RedisOptions = {}): Redis {
  return new Redis(testRedisUrl(), { db: workerDb(), lazyConnect: false, ...options });
}

export async function flushRedis(client: Redis): Promise<void> {
  await client.flushdb();
  await client.script('FLUSH');
}

/** Every key in this worker's database, with its PTTL (−1: no TTL, −2: gone). */
export async function keysWithTtl(client: Redis): Promise<Array<{ key: string; pttl: number }>> {
  const out: Array<{ key: string; pttl: number }> = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) out.push({ key, pttl: await client.pttl(key) });
  } while (cursor !== '0');
  return out;
}

/**
 * One connection for a test file: opened before all tests, database and script cache flushed
 * before each, closed after all. Call at the top level of a file; use the returned getter.
 */
export function useTestRedis(options: RedisOptions = {}): () => Redis {
  let client: Redis | undefined;
  beforeAll(() => {
    client = connectIoredis(options);
  });
  beforeEach(() => flushRedis(client!));
  afterAll(async () => {
    await client?.quit();
  });
  return () => {
    if (!client) throw new Error('useTestRedis(): the connection exists only inside tests');
    return client;
  };
}

/**
 * One ioredis connection for a test file, opened before all its tests and closed after them.
 * Unlike `useTestRedis` it flushes nothing: each file flushes where its Redis tests start.
 * Call at the top level of a file; use the returned getter inside tests.
 */
export function useTestRedisConnection(options: RedisOptions = {}): () => Redis {
  let client: Redis | undefined;
  beforeAll(() => {
    client = connectIoredis(options);
  });
  afterAll(async () => {
    await client?.quit();
  });
  return () => {
    if (!client)
      throw new Error('useTestRedisConnection(): the connection exists only inside tests');
    return client;
  };
}

/**
 * A redis-server of its own for a test file (or a describe block), started before its tests and
 * stopped after them, with one ioredis connection: for tests that need the server-wide script
 * cache or command counters to themselves (other jest workers share the suite's server).
 * Call at the top level of the file or block; use the returned getter inside tests.
 */
export function useOwnRedisServer(): () => { server: RedisServerHandle; client: Redis } {
  let own: { server: RedisServerHandle; client: Redis } | undefined;
  beforeAll(async () => {
    const server = await startRedisServer();
    own = { server, client: new Redis(server.port) };
  });
  afterAll(async () => {
    own?.client.disconnect();
    await own?.server.stop();
  });
  return () => {
    if (!own) throw new Error('useOwnRedisServer(): the server exists only inside tests');
    return own;
  };
}

/**
 * One short-lived connection to the node on `port` (127.0.0.1) for the sentinel harness: no
 * offline queue, no retries, so a dead node fails at once instead of hanging.
 */
export async function withNode<T>(port: number, fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await fn(client);
  } finally {
    client.disconnect();
  }
}
