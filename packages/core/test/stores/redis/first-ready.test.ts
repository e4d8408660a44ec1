/**
 * A short-lived process (a serverless handler, a cron job) decides right after creating its
 * Redis client. With the fail-fast settings docs/reliability.md recommends (no offline queue),
 * every decision made before the client's first `ready` used to fail and be admitted by
 * `'open'`, so such a process was never limited. The store now waits for the first `ready`,
 * bounded by the limiter's `timeout`; once the client has been ready, it never waits again.
 */
import { fixedWindow, RateLimiter, redisStore } from '@floodgate/core';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { testRedisUrl, useTestRedis, workerDb } from '../../../../../test/harness/redis';

useTestRedis();

const policies = fixedWindow({ limit: 2, window: '1m' });
const failFast = { enableOfflineQueue: false, maxRetriesPerRequest: 0 } as const;

/** `[remaining, reason]` of each decision. */
const views = (decisions: { remaining: number; reason?: string }[]) =>
  decisions.map((d) => [d.remaining, d.reason]);

describe('decisions made before the client is first ready', () => {
  it('ioredis without an offline queue: counted, not admitted as store errors', async () => {
    const client = new Redis(testRedisUrl(), { ...failFast, db: workerDb() });
    try {
      expect(client.status).not.toBe('ready');
      const limiter = new RateLimiter({ store: redisStore({ client }), policies });
      const decisions = await Promise.all([limiter.consume('job'), limiter.consume('job')]);
      const third = await limiter.consume('job');
      expect(views([...decisions, third]).sort()).toEqual([
        [0, undefined],
        [0, undefined],
        [1, undefined],
      ]);
      expect(third.allowed).toBe(false);
    } finally {
      client.disconnect();
    }
  });

  it('node-redis without an offline queue, connect() not awaited: counted', async () => {
    const client = createClient({
      url: testRedisUrl(),
      database: workerDb(),
      disableOfflineQueue: true,
    });
    client.on('error', () => undefined);
    const connecting = client.connect();
    try {
      expect(client.isReady).toBe(false);
      const limiter = new RateLimiter({ store: redisStore({ client }), policies });
      const first = await limiter.consume('job');
      expect(views([first])).toEqual([[1, undefined]]);
    } finally {
      await connecting;
      await client.quit();
    }
  });

  it('the wait is bounded by the timeout when Redis never comes', async () => {
    const client = new Redis({ host: '127.0.0.1', port: 1, ...failFast });
    client.on('error', () => undefined);
    try {
      const limiter = new RateLimiter({
        store: redisStore({ client }),
        policies,
        timeout: 150,
        circuitBreaker: false,
      });
      const decision = await limiter.consume('job');
      expect([decision.allowed, decision.reason]).toEqual([true, 'timeout']);
    } finally {
      client.disconnect();
    }
  });

  it('after the first ready, a lost connection fails at once (fail-fast kept)', async () => {
    const client = new Redis(testRedisUrl(), { ...failFast, db: workerDb() });
    await new Promise((resolve) => client.once('ready', resolve));
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies,
      timeout: '5s',
      circuitBreaker: false,
    });
    expect((await limiter.consume('job')).reason).toBeUndefined();
    client.disconnect();
    const decision = await limiter.consume('job');
    expect(decision.reason).toBe('store-error');
  });
});
