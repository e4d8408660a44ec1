/**
 * `scripts: 'functions'` across a real Redis restart, through ioredis and node-redis: a server
 * that keeps nothing on disk comes back without the libraries (the store loads them again, once,
 * and re-sends), one with an append-only file comes back with them (nothing is loaded again).
 * Neither case ever shows NOSCRIPT, nor a "function not found" as a store error.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server.js';
import { type Decision, gcra, RateLimiter, redisStore } from '../../src/index.js';
import type { RedisClient } from '../../src/stores/redis-client.js';
import { FUNCTION_PREFIX } from '../../src/stores/redis-functions.js';

jest.setTimeout(30_000);

type Persistence = 'functions lost' | 'functions kept (AOF)';
type Client = 'ioredis' | 'node-redis';

async function connect(which: Client, url: string): Promise<[RedisClient, () => void]> {
  if (which === 'ioredis') {
    const c = new Redis(url, { retryStrategy: () => 50 });
    c.on('error', () => undefined);
    return [c, () => c.disconnect()];
  }
  const c = createClient({ url, socket: { reconnectStrategy: 50 } });
  c.on('error', () => undefined);
  await c.connect();
  return [c, () => c.destroy()];
}

/** INFO `section` of the server, as text. */
async function info(server: RedisServerHandle, section: string): Promise<string> {
  const admin = new Redis(server.port);
  try {
    return String(await admin.info(section));
  } finally {
    admin.disconnect();
  }
}

describe.each([
  ['functions lost', 'ioredis'],
  ['functions lost', 'node-redis'],
  ['functions kept (AOF)', 'ioredis'],
  ['functions kept (AOF)', 'node-redis'],
] as [Persistence, Client][])('restart, %s, %s', (persistence, which) => {
  let server: RedisServerHandle;
  const kept = persistence === 'functions kept (AOF)';
  beforeAll(async () => {
    server = await startRedisServer(kept ? { args: ['--appendonly', 'yes'] } : {});
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('no NOSCRIPT and no "function not found" store error; decisions exact after', async () => {
    const [client, close] = await connect(which, server.url);
    const messages: string[] = [];
    const limiter = new RateLimiter({
      store: redisStore({ client, scripts: 'functions' }),
      // GCRA 4/h: exact for the whole test, with no aligned window edge to cross mid-test.
      policies: [gcra({ limit: 4, window: '1h' })],
      prefix: `functions-restart-${process.pid}`,
      onStoreError: 'closed',
      // The first call loads the library (an FCALL, FUNCTION LOAD, the FCALL again): room for a
      // loaded machine.
      timeout: 1000,
      circuitBreaker: false,
      hooks: { onStoreError: (event) => messages.push(event.error.message) },
    });
    try {
      expect((await limiter.consume('k')).remaining).toBe(3);
      expect((await limiter.consume('k')).remaining).toBe(2);
      // SIGKILL keeps nothing of a server without persistence; SIGTERM lets the AOF be written.
      if (kept) {
        await server.restart();
      } else {
        await server.kill();
        await server.restart();
      }
      let first: Decision | undefined;
      for (let i = 0; i < 100; i++) {
        first = await limiter.consume('k');
        if (first.reason === undefined) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // Kept: the key and the library came back. Lost: the key starts over, exactly.
      expect([first?.allowed, first?.reason, first?.remaining]).toEqual([
        true,
        undefined,
        kept ? 1 : 3,
      ]);
      const rest: Decision[] = [];
      for (let i = 0; i < 4; i++) rest.push(await limiter.consume('k'));
      expect(rest.filter((d) => d.allowed)).toHaveLength(kept ? 1 : 3);
      expect(rest.filter((d) => d.reason !== undefined)).toEqual([]);

      expect(await info(server, 'errorstats')).not.toContain('NOSCRIPT');
      const loads = /cmdstat_function\|load:calls=(\d+)/.exec(await info(server, 'commandstats'));
      // Lost: one FUNCTION LOAD since the restart (the calls that found no function share it).
      expect(Number(loads?.[1] ?? 0)).toBe(kept ? 0 : 1);
      expect(messages.filter((m) => /NOSCRIPT|function not found/i.test(m))).toEqual([]);
      const admin = new Redis(server.port);
      const libraries = (await admin.call(
        'FUNCTION',
        'LIST',
        'LIBRARYNAME',
        `${FUNCTION_PREFIX}*`,
      )) as unknown[];
      admin.disconnect();
      expect(libraries).toHaveLength(1);
    } finally {
      close();
    }
  });
});
