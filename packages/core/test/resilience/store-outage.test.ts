/**
 * Outages against a redis-server this file starts, pauses (CLIENT PAUSE), stops (SIGSTOP) and
 * kills: leases answer through the failure policy within `timeout`, limiters on one connection
 * share one circuit breaker, fallbacks are bounded by `timeout`, hooks that return rejected
 * promises are contained, and an outage and its recovery are each reported by one warning.
 */

import { serveExpress, serveKoa } from '@floodgate/http-test-kit';
import { Redis } from 'ioredis';
import request from 'supertest';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server.js';
import {
  ConcurrencyLimiter,
  type Decision,
  fixedWindow,
  gcra,
  memoryStore,
  RateLimiter,
  redisStore,
  type Store,
} from '../../src/index.js';

let server: RedisServerHandle;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
const warnings: Array<{ code: string; message: string }> = [];
let warn: jest.SpyInstance;
const clients: Redis[] = [];

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  warn = jest.spyOn(process, 'emitWarning').mockImplementation(((
    message: string,
    options?: { code?: string },
  ) => {
    if (options?.code?.startsWith('FLOODGATE_')) warnings.push({ code: options.code, message });
  }) as never);
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
  process.off('unhandledRejection', onUnhandled);
  warn.mockRestore();
});
beforeEach(() => {
  warnings.length = 0;
});
afterEach(async () => {
  if (server.pid > 0) process.kill(server.pid, 'SIGCONT');
  for (const client of clients.splice(0)) client.disconnect();
  // Let late replies (answered after their timeout) settle, then check none went unhandled.
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(unhandled).toEqual([]);
  if (server.pid < 0) await server.restart();
});

/** ioredis with its defaults (offline queue on), connected and ready. */
async function connect(): Promise<Redis> {
  const client = new Redis(server.url, { retryStrategy: () => 50 });
  client.on('error', () => undefined);
  clients.push(client);
  await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

let prefixes = 0;
const prefix = () => `outage${process.pid}x${prefixes++}`;

/** Resolves with the call's result and how long it took (ms). */
async function timed<T>(call: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await call();
  return [value, performance.now() - started];
}

/** Lets process warnings (emitted on the next tick) and hook rejections arrive. */
async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('leases follow the failure policy within timeout', () => {
  const leasesOn = (client: Redis, onStoreError: 'open' | 'closed' | Store) =>
    new ConcurrencyLimiter({
      store: redisStore({ client }),
      limit: 1,
      leaseTtl: '1m',
      prefix: prefix(),
      timeout: 100,
      onStoreError,
      circuitBreaker: false,
    });

  test.each([
    ['CLIENT PAUSE', 'pause'],
    ['SIGSTOP', 'stop'],
  ])(
    '%s: open admits without a lease, closed refuses, a fallback store holds leases',
    async (_label, how) => {
      const client = await connect();
      const open = leasesOn(client, 'open');
      const closed = leasesOn(client, 'closed');
      const fallback = leasesOn(client, memoryStore());
      expect((await open.acquire('warm')).reason).toBeUndefined();
      if (how === 'pause') {
        const admin = new Redis(server.url);
        clients.push(admin);
        await admin.client('PAUSE', 3000);
      } else {
        process.kill(server.pid, 'SIGSTOP');
      }
      const [a, aMs] = await timed(() => open.acquire('k'));
      expect([a.allowed, a.reason, a.lease]).toEqual([true, 'timeout', undefined]);
      const [c, cMs] = await timed(() => closed.acquire('k'));
      expect([c.allowed, c.reason, c.lease]).toEqual([false, 'timeout', undefined]);
      expect(c.retryAfter).toBeGreaterThan(0);
      const [f1, fMs] = await timed(() => fallback.acquire('k'));
      expect([f1.allowed, f1.reason]).toEqual([true, 'fallback']);
      const f2 = await fallback.acquire('k');
      expect([f2.allowed, f2.reason]).toEqual([false, 'fallback']);
      expect(await f1.lease!.release()).toBe(true);
      expect((await fallback.acquire('k')).allowed).toBe(true);
      // Bounded by the 100 ms timeout, not by the 3 s pause or the stop (which has no end).
      for (const ms of [aMs, cMs, fMs]) expect(ms).toBeLessThan(1500);
    },
  );

  test("'closed' under an open circuit says when the next probe is", async () => {
    const client = await connect();
    const limiter = new ConcurrencyLimiter({
      store: redisStore({ client }),
      limit: 1,
      leaseTtl: '1m',
      prefix: prefix(),
      timeout: 50,
      onStoreError: 'closed',
      circuitBreaker: { failureThreshold: 1, cooldown: '10s' },
    });
    process.kill(server.pid, 'SIGSTOP');
    expect((await limiter.acquire('k')).reason).toBe('timeout');
    const d = await limiter.acquire('k');
    expect([d.allowed, d.reason]).toEqual([false, 'circuit-open']);
    expect(limiter.nextProbeIn()).toBeGreaterThan(9000);
    expect(d.retryAfter).toBeGreaterThan(9000);
    expect(d.retryAfter).toBeLessThanOrEqual(10_000);
  });

  test('a lease release is bounded by timeout too', async () => {
    const client = await connect();
    const limiter = leasesOn(client, 'open');
    const held = await limiter.acquire('k');
    process.kill(server.pid, 'SIGSTOP');
    const [error, ms] = await timed(() =>
      held.lease!.release().then(
        () => undefined,
        (e) => e,
      ),
    );
    expect(error).toMatchObject({ code: 'FLOODGATE_STORE_ERROR' });
    expect(ms).toBeLessThan(1500);
  });
});

describe("an adapter's concurrency option", () => {
  test.each([
    ['Express', serveExpress],
    ['Koa', serveKoa],
  ])(
    "%s: leases take the middleware's timeout and onStoreError (SIGSTOPped Redis)",
    async (_name, serve) => {
      const client = await connect();
      const app = await serve({
        limiters: [
          {
            store: redisStore({ client }),
            policies: fixedWindow({ limit: 100, window: '1m' }),
            prefix: prefix(),
            timeout: 100,
            onStoreError: 'open',
            circuitBreaker: false,
            concurrency: { limit: 1, prefix: prefix() },
          },
        ],
      });
      try {
        expect((await request(app.url).get('/')).status).toBe(200);
        process.kill(server.pid, 'SIGSTOP');
        const [response, ms] = await timed(async () => request(app.url).get('/'));
        expect(response.status).toBe(200);
        // The rate limiter's 100 ms and the lease's inherited 100 ms: the lease's own default
        // timeout is 1 s, and before leases had one the request hung while Redis was stopped.
        expect(ms).toBeLessThan(900);
      } finally {
        process.kill(server.pid, 'SIGCONT');
        await app.close();
      }
    },
  );
});

describe('one circuit breaker per store connection', () => {
  test('stacked limiters on a dead Redis open one shared circuit, after the threshold counted across them', async () => {
    const client = await connect();
    const options = {
      timeout: 50,
      circuitBreaker: { failureThreshold: 2, cooldown: '10s' },
    } as const;
    const perMinute = new RateLimiter({
      store: redisStore({ client }),
      policies: fixedWindow({ limit: 5, window: '1m' }),
      prefix: prefix(),
      ...options,
    });
    // A second redisStore on the same client shares the breaker too.
    const perSecond = new RateLimiter({
      store: redisStore({ client }),
      policies: gcra({ limit: 5, window: '1s' }),
      prefix: prefix(),
      ...options,
    });
    const leases = new ConcurrencyLimiter({
      store: redisStore({ client }),
      limit: 2,
      leaseTtl: '1m',
      prefix: prefix(),
      ...options,
    });
    const other = await connect();
    await server.kill();
    expect((await perMinute.consume('k')).reason).toBe('timeout');
    expect((await perSecond.consume('k')).reason).toBe('timeout');
    // Two failures on the connection: the circuit is open for every limiter on it.
    const [d, ms] = await timed(async () => [
      await perMinute.consume('k'),
      await perSecond.consume('k'),
      await leases.acquire('k'),
    ]);
    expect(d.map((x: Decision) => x.reason)).toEqual([
      'circuit-open',
      'circuit-open',
      'circuit-open',
    ]);
    expect(ms).toBeLessThan(50);
    expect([perMinute.circuit, perSecond.circuit, leases.circuit]).toEqual([
      'open',
      'open',
      'open',
    ]);
    expect(perMinute.nextProbeIn()).toBeGreaterThan(9000);
    expect(Math.abs(perSecond.nextProbeIn() - perMinute.nextProbeIn())).toBeLessThan(100);
    // A limiter on another client keeps its own circuit.
    const elsewhere = new RateLimiter({
      store: redisStore({ client: other }),
      policies: fixedWindow({ limit: 5, window: '1m' }),
      prefix: prefix(),
      ...options,
    });
    expect([elsewhere.circuit, elsewhere.nextProbeIn()]).toEqual(['closed', 0]);
  });
});

describe('fallbacks are bounded by timeout', () => {
  const never = <T>() => new Promise<T>(() => undefined);

  test('a fallback limiter that never settles', async () => {
    const client = await connect();
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: fixedWindow({ limit: 5, window: '1m' }),
      prefix: prefix(),
      timeout: 50,
      onStoreError: { consume: never, peek: never },
    });
    process.kill(server.pid, 'SIGSTOP');
    const [d, ms] = await timed(() => limiter.consume('k'));
    expect([d.allowed, d.reason]).toEqual([true, 'timeout']);
    expect(ms).toBeLessThan(1000);
  });

  test('a fallback store that never settles', async () => {
    const client = await connect();
    const hanging: Store = {
      kind: 'hanging',
      prepare: () => ({ decide: never, reset: never, refund: never, block: never, unblock: never }),
    };
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: fixedWindow({ limit: 5, window: '1m' }),
      prefix: prefix(),
      timeout: 50,
      onStoreError: hanging,
    });
    process.kill(server.pid, 'SIGSTOP');
    const [d, ms] = await timed(() => limiter.consume('k'));
    expect([d.allowed, d.reason]).toEqual([true, 'timeout']);
    expect(ms).toBeLessThan(1000);
  });
});

describe('hooks that return a rejected promise', () => {
  test('are treated like a throw: ignored, one warning, no unhandled rejection', async () => {
    const client = await connect();
    let calls = 0;
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: fixedWindow({ limit: 2, window: '1m' }),
      prefix: prefix(),
      timeout: 50,
      circuitBreaker: false,
      hooks: {
        onDecision: async () => {
          calls++;
          throw new Error('metrics backend down');
        },
        onStoreError: () => Promise.reject(new Error('alerting down')),
      },
    });
    const ds = [await limiter.consume('k'), await limiter.consume('k'), await limiter.consume('k')];
    expect(ds.map((d) => d.allowed)).toEqual([true, true, false]);
    await server.kill();
    expect((await limiter.consume('k')).reason).toBe('timeout');
    await settle();
    expect(calls).toBe(4);
    expect(warnings.filter((w) => w.code === 'FLOODGATE_HOOK_ERROR')).toHaveLength(1);
    const leases = new ConcurrencyLimiter({
      store: memoryStore(),
      limit: 1,
      leaseTtl: '1s',
      hooks: { onDecision: async () => Promise.reject(new Error('down')) },
    });
    expect((await leases.acquire('k')).allowed).toBe(true);
    await settle();
  });
});

describe('failure-policy answers are reported', () => {
  test('one warning when an outage starts, one when the store answers again, none in between', async () => {
    const client = await connect();
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: fixedWindow({ limit: 100, window: '1m' }),
      prefix: prefix(),
      timeout: 50,
      circuitBreaker: { failureThreshold: 2, cooldown: 100 },
    });
    expect((await limiter.consume('k')).reason).toBeUndefined();
    await server.kill();
    for (let i = 0; i < 10; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    await settle();
    expect(warnings.map((w) => w.code)).toEqual(['FLOODGATE_STORE_UNAVAILABLE']);
    expect(warnings[0]!.message).toContain('RateLimiter');
    expect(warnings[0]!.message).toContain("'open'");
    await server.restart();
    let answered: Decision | undefined;
    for (let i = 0; i < 100; i++) {
      answered = await limiter.consume('k');
      if (answered.reason === undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(answered?.reason).toBeUndefined();
    await limiter.consume('k');
    await settle();
    expect(warnings.map((w) => w.code)).toEqual([
      'FLOODGATE_STORE_UNAVAILABLE',
      'FLOODGATE_STORE_RECOVERED',
    ]);
  });
});
