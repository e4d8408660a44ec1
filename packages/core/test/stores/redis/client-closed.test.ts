/**
 * `client.quit()` or `disconnect()` with decisions pending (a short-lived process that closes its
 * connection without awaiting them): those already sent are answered and counted; those the
 * store had not sent yet (held for the next batch, or made after the close) fail through the
 * failure policy with a RateLimitStoreError whose `clientClosed` is true and whose message says
 * the client was closed, and FLOODGATE_STORE_UNAVAILABLE names that cause instead of reading as
 * an outage. They used to fail as a bare "Connection is closed." (ioredis) or as a client "not
 * connected" (node-redis).
 */
import {
  type Decision,
  fixedWindow,
  RateLimiter,
  type RateLimitStoreError,
  redisStore,
} from '@floodgate/core';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { testRedisUrl, useTestRedis, workerDb } from '../../../../../test/harness/redis';

useTestRedis();

/** An open client of each kind and how it is closed. */
const clients = {
  'ioredis quit()': async () => {
    const client = new Redis(testRedisUrl(), { db: workerDb() });
    await new Promise((resolve) => client.once('ready', resolve));
    // quit() itself may reject ("Connection is closed.") when the socket closes before its OK
    // is read: the close is what this test is about, not QUIT's own reply.
    return { client, close: () => client.quit().catch(() => undefined) };
  },
  'ioredis disconnect()': async () => {
    const client = new Redis(testRedisUrl(), { db: workerDb() });
    await new Promise((resolve) => client.once('ready', resolve));
    return { client, close: async () => client.disconnect() };
  },
  'node-redis quit()': async () => {
    const client = createClient({ url: testRedisUrl(), database: workerDb() });
    client.on('error', () => undefined);
    await client.connect();
    return { client, close: () => client.quit() };
  },
  'node-redis destroy()': async () => {
    const client = createClient({ url: testRedisUrl(), database: workerDb() });
    client.on('error', () => undefined);
    await client.connect();
    return { client, close: async () => client.destroy() };
  },
} as const;

/** Decisions made just before and just after the close, the store errors and the warnings. */
async function closeWithPending(
  kind: keyof typeof clients,
  batch: boolean,
  onStoreError: 'open' | 'closed',
) {
  const { client, close } = await clients[kind]();
  const errors: RateLimitStoreError[] = [];
  const limiter = new RateLimiter({
    store: redisStore({ client, batch }),
    policies: fixedWindow({ limit: 100, window: '1m' }),
    onStoreError,
    circuitBreaker: false,
    hooks: { onStoreError: (event) => void errors.push(event.error) },
  });
  await limiter.consume('warm-up');
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    const pending: Promise<Decision>[] = [];
    for (let i = 0; i < 3; i++) pending.push(limiter.consume('k'));
    const closing = close();
    for (let i = 0; i < 2; i++) pending.push(limiter.consume('k'));
    const decisions = await Promise.all(pending);
    await closing;
    const warnings = spy.mock.calls
      .filter((c) => (c[1] as { code?: string })?.code === 'FLOODGATE_STORE_UNAVAILABLE')
      .map((c) => String(c[0]));
    return { decisions, errors, warnings };
  } finally {
    spy.mockRestore();
  }
}

describe.each(Object.keys(clients) as (keyof typeof clients)[])('%s', (kind) => {
  it.each([
    ['batched', true],
    ['one by one', false],
  ])(
    '%s: a decision not sent before the close fails as "client closed", never silently',
    async (_label, batch) => {
      const { decisions, errors, warnings } = await closeWithPending(kind, batch, 'open');
      const failed = decisions.filter((d) => d.reason !== undefined);
      // The two made after the close were never sent; the others may have been.
      expect(failed.length).toBeGreaterThanOrEqual(2);
      for (const d of failed) expect([d.allowed, d.reason]).toEqual([true, 'store-error']);
      for (const d of decisions.filter((x) => x.reason === undefined)) {
        expect(d.remaining).toBeLessThan(100);
      }
      expect(errors.length).toBe(failed.length);
      for (const error of errors) {
        expect(error.clientClosed).toBe(true);
        expect(error.message).toMatch(/client was closed .*before this call was sent/);
        expect(error.message).toMatch(/await every decision/i);
      }
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/the store's Redis client was closed/);
      expect(warnings[0]).toMatch(/FLOODGATE_CLIENT_CLOSED/);
    },
  );
});

it("onStoreError 'closed' refuses a decision the closed client never sent", async () => {
  const { decisions, errors } = await closeWithPending('ioredis quit()', true, 'closed');
  const failed = decisions.filter((d) => d.reason !== undefined);
  expect(failed.length).toBeGreaterThanOrEqual(2);
  for (const d of failed) expect([d.allowed, d.reason]).toEqual([false, 'store-error']);
  expect(errors.every((e) => e.clientClosed)).toBe(true);
});

it('a store error of a client that is open is not "client closed"', async () => {
  const client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true });
  client.on('error', () => undefined);
  const errors: RateLimitStoreError[] = [];
  const limiter = new RateLimiter({
    store: redisStore({ client }),
    policies: fixedWindow({ limit: 2, window: '1m' }),
    timeout: 200,
    circuitBreaker: false,
    hooks: { onStoreError: (event) => void errors.push(event.error) },
  });
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    await limiter.consume('k');
  } finally {
    spy.mockRestore();
    client.disconnect();
  }
  expect(errors.length).toBeGreaterThan(0);
  expect(errors.map((e) => e.clientClosed)).not.toContain(true);
});
