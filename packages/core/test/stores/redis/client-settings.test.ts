/**
 * Client settings that used to switch limiting off without saying why: an ioredis client with
 * `stringNumbers: true` (every reply read as a store error, so `'open'` admitted everything) is
 * refused at `redisStore()`; a node-redis client never `connect()`ed fails at once with an error
 * that says so; and FLOODGATE_STORE_UNAVAILABLE carries the first error's message and code, so a
 * configuration mistake does not read as an outage.
 */
import { fixedWindow, RateLimitConfigError, RateLimiter, redisStore } from '@floodgate/core';
import { Cluster } from 'ioredis';
import { createClient } from 'redis';
import {
  connectIoredis,
  flushRedis,
  testRedisUrl,
  useTestRedis,
  workerDb,
} from '../../../../../test/harness/redis';

const redis = useTestRedis();

/** The FLOODGATE_STORE_UNAVAILABLE messages given while `run` ran. */
async function outageWarnings(run: () => Promise<void>): Promise<string[]> {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    await run();
    return spy.mock.calls
      .filter(
        (c) => (c[1] as { code?: string } | undefined)?.code === 'FLOODGATE_STORE_UNAVAILABLE',
      )
      .map((c) => String(c[0]));
  } finally {
    spy.mockRestore();
  }
}

const policies = fixedWindow({ limit: 2, window: '1m' });

describe('ioredis stringNumbers: true', () => {
  it('is refused at redisStore() with an error naming the setting', async () => {
    const client = connectIoredis({ stringNumbers: true });
    try {
      let thrown: unknown;
      try {
        redisStore({ client });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(RateLimitConfigError);
      expect(thrown).toMatchObject({ field: 'redisStore.client' });
      expect((thrown as Error).message).toMatch(/stringNumbers/);
    } finally {
      client.disconnect();
    }
  });

  it('is refused on a Cluster through its redisOptions', () => {
    const [host, port] = new URL(testRedisUrl()).host.split(':');
    const cluster = new Cluster([{ host: host!, port: Number(port) }], {
      lazyConnect: true,
      redisOptions: { stringNumbers: true },
    });
    expect(() => redisStore({ client: cluster })).toThrow(/stringNumbers/);
    cluster.disconnect();
  });

  it('a client without it still counts (the refusal is that setting only)', async () => {
    const client = connectIoredis({ stringNumbers: false });
    try {
      const limiter = new RateLimiter({ store: redisStore({ client }), policies });
      const decisions = [await limiter.consume('k'), await limiter.consume('k')];
      expect(decisions.map((d) => [d.remaining, d.reason])).toEqual([
        [1, undefined],
        [0, undefined],
      ]);
    } finally {
      client.disconnect();
    }
  });
});

describe('a node-redis client never connect()ed', () => {
  it('fails at once, and the warning says the client is not connected', async () => {
    const client = createClient({ url: testRedisUrl(), database: workerDb() });
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies,
      timeout: '5s',
    });
    let reason: string | undefined;
    const warnings = await outageWarnings(async () => {
      reason = (await limiter.consume('k')).reason;
    });
    // A store error, not the 5 s timeout: nothing will ever connect this client by itself.
    expect(reason).toBe('store-error');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/not connected/);
    expect(warnings[0]).toMatch(/connect\(\)/);
    expect(warnings[0]).toMatch(/ClientClosedError/);
  });
});

describe('FLOODGATE_STORE_UNAVAILABLE', () => {
  it("carries the first error's message and its Redis error code", async () => {
    const limiter = new RateLimiter({ store: redisStore({ client: redis() }), policies });
    await limiter.consume('k');
    const [key] = await redis().keys('*');
    await flushRedis(redis());
    // A key of the wrong type: every decision on it fails inside Redis with WRONGTYPE.
    await redis().rpush(key!, 'x');
    const broken = new RateLimiter({ store: redisStore({ client: redis() }), policies });
    const warnings = await outageWarnings(async () => {
      expect((await broken.consume('k')).reason).toBe('store-error');
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/WRONGTYPE/);
    expect(warnings[0]).toMatch(/code WRONGTYPE/);
  });

  it('carries the message of an ioredis client without an offline queue that lost Redis', async () => {
    const client = connectIoredis({ enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    await new Promise((resolve) => client.once('ready', resolve));
    client.disconnect();
    const limiter = new RateLimiter({ store: redisStore({ client }), policies, timeout: 200 });
    const warnings = await outageWarnings(async () => {
      expect((await limiter.consume('k')).reason).toBe('store-error');
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/store-error: .*(enableOfflineQueue|writeable|closed)/i);
  });
});
