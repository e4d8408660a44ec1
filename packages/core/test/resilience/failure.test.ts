/**
 * The failure policy against a redis-server this file starts and kills: open, closed and
 * fallback answers while it is down, the timeout answering for commands stuck in ioredis's
 * offline queue, the circuit breaker, hooks, restart and script loss, and option validation.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server.js';
import {
  type CircuitState,
  type Decision,
  fixedWindow,
  gcra,
  memoryStore,
  RateLimitConfigError,
  RateLimiter,
  type RateLimiterOptions,
  redisStore,
  slidingLog,
  tokenBucket,
} from '../../src/index.js';
import type { RedisClient } from '../../src/stores/redis-client.js';
import { scriptFor } from '../../src/stores/scripts.js';

let server: RedisServerHandle;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
  process.off('unhandledRejection', onUnhandled);
});
afterEach(async () => {
  // Let late replies (answered after their timeout) settle, then check none went unhandled.
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(unhandled).toEqual([]);
  if (server.pid < 0) await server.restart();
});

/** ioredis with its defaults: offline queue on, 20 retries per request. */
function defaultIoredis(): Redis {
  const client = new Redis(server.url, { retryStrategy: () => 50 });
  client.on('error', () => undefined);
  return client;
}

const policies = () => [fixedWindow({ limit: 2, window: '1m' }), gcra({ limit: 2, window: '1m' })];
let prefixes = 0;
const limiterOn = (client: RedisClient, options: Partial<RateLimiterOptions> = {}) =>
  new RateLimiter({
    store: redisStore({ client }),
    policies: policies(),
    prefix: `fail${process.pid}x${prefixes++}`,
    ...options,
  });

/** Peeks every 50 ms (at most 5 s) until the store itself answers again. */
async function untilStoreAnswers(limiter: RateLimiter): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await limiter.peek('probe')).reason === undefined) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const repeat = async (n: number, call: () => Promise<Decision>) => {
  const out: Decision[] = [];
  for (let i = 0; i < n; i++) out.push(await call());
  return out;
};

describe('while Redis is down', () => {
  test("'open' (the default) admits, and says the store timed out behind the offline queue", async () => {
    const client = defaultIoredis();
    const limiter = limiterOn(client, { timeout: 100, circuitBreaker: false });
    // Connected and the script cached first: under load those alone can take 100 ms.
    await new Promise((resolve) => client.once('ready', resolve));
    await limiterOn(client, { timeout: 5000 }).consume('warm');
    expect((await limiter.consume('k')).reason).toBeUndefined();
    await server.kill();
    const ds = await repeat(3, () => limiter.consume('k'));
    expect(ds.map((d) => [d.allowed, d.reason])).toEqual([
      [true, 'timeout'],
      [true, 'timeout'],
      [true, 'timeout'],
    ]);
    expect(ds[0]).toMatchObject({ limit: 2, remaining: 2, retryAfter: 0 });
    client.disconnect();
  });

  test("'closed' denies with a retryAfter, and a client that fails fast gives 'store-error'", async () => {
    const client = new Redis(server.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 50,
    });
    client.on('error', () => undefined);
    await new Promise((resolve) => client.once('ready', resolve));
    const limiter = limiterOn(client, { onStoreError: 'closed', circuitBreaker: false });
    expect((await limiter.consume('k')).allowed).toBe(true);
    await server.kill();
    const d = await limiter.consume('k');
    expect(d).toMatchObject({ allowed: false, reason: 'store-error', remaining: 0 });
    expect(d.retryAfter).toBeGreaterThan(0);
    client.disconnect();
  });

  test('a fallback memory store decides exactly with the same policies', async () => {
    const client = defaultIoredis();
    const limiter = limiterOn(client, { onStoreError: memoryStore(), timeout: 100 });
    await server.kill();
    const ds = await repeat(4, () => limiter.consume('k'));
    expect(ds.map((d) => [d.allowed, d.reason])).toEqual([
      [true, 'fallback'],
      [true, 'fallback'],
      [false, 'fallback'],
      [false, 'fallback'],
    ]);
    expect((await limiter.consume('other')).allowed).toBe(true);
    client.disconnect();
  });

  test('a fallback limiter decides with its own (divided) policies', async () => {
    const client = defaultIoredis();
    const insurance = new RateLimiter({
      store: memoryStore(),
      // GCRA has no aligned window edge that could reset the count between the two calls.
      policies: [gcra({ limit: 1, window: '1m', name: 'insurance' })],
    });
    const limiter = limiterOn(client, { onStoreError: insurance, timeout: 100 });
    await server.kill();
    const ds = await repeat(2, () => limiter.consume('k'));
    expect(ds.map((d) => [d.allowed, d.reason, d.policy])).toEqual([
      [true, 'fallback', 'insurance'],
      [false, 'fallback', 'insurance'],
    ]);
    client.disconnect();
  });

  test('node-redis with its offline queue: the timeout answers too', async () => {
    const client = createClient({ url: server.url, socket: { reconnectStrategy: 50 } });
    client.on('error', () => undefined);
    await client.connect();
    const limiter = limiterOn(client, { timeout: 100, onStoreError: 'closed' });
    expect((await limiter.consume('k')).reason).toBeUndefined();
    await server.kill();
    // Once node-redis has seen the socket close, commands wait in its offline queue.
    for (let i = 0; i < 100 && client.isReady; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const d = await limiter.consume('k');
    expect([d.allowed, d.reason]).toEqual([false, 'timeout']);
    client.destroy();
  });
});

describe('the circuit breaker', () => {
  test('opens after the threshold, stops asking Redis, probes after the cooldown, closes on success', async () => {
    const client = defaultIoredis();
    const states: CircuitState[] = [];
    const failures: string[] = [];
    const decisions: Array<string | undefined> = [];
    const limiter = limiterOn(client, {
      timeout: 50,
      circuitBreaker: { failureThreshold: 3, cooldown: 300 },
      hooks: {
        onCircuitChange: (state) => states.push(state),
        onStoreError: (event) => failures.push(event.failure),
        onDecision: (decision) => decisions.push(decision.reason),
      },
    });
    await server.kill();
    const ds = await repeat(6, () => limiter.consume('k'));
    expect(ds.map((d) => d.reason)).toEqual([
      'timeout',
      'timeout',
      'timeout',
      'circuit-open',
      'circuit-open',
      'circuit-open',
    ]);
    expect(failures).toEqual(['timeout', 'timeout', 'timeout']);
    expect(limiter.circuit).toBe('open');
    await server.restart();
    // Bounded: the cooldown passes, one probe reaches the restarted server and closes the circuit.
    await untilStoreAnswers(limiter);
    const last = await limiter.consume('k2');
    expect(last.reason).toBeUndefined();
    expect(limiter.circuit).toBe('closed');
    expect(states[0]).toBe('open');
    expect(states).toContain('half-open');
    expect(states.at(-1)).toBe('closed');
    expect(decisions.length).toBeGreaterThanOrEqual(ds.length + 1);
    client.disconnect();
  });

  test('half-open lets exactly one probe reach the store; concurrent calls get the failure policy', async () => {
    const client = defaultIoredis();
    const failures: string[] = [];
    const limiter = limiterOn(client, {
      timeout: 50,
      circuitBreaker: { failureThreshold: 1, cooldown: 100 },
      hooks: { onStoreError: (event) => failures.push(event.failure) },
    });
    await server.kill();
    expect((await limiter.consume('k')).reason).toBe('timeout');
    expect(limiter.circuit).toBe('open');
    await new Promise((resolve) => setTimeout(resolve, 150));
    const burst = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
    expect(burst.map((d) => d.reason).sort()).toEqual([
      'circuit-open',
      'circuit-open',
      'circuit-open',
      'circuit-open',
      'timeout',
    ]);
    expect(failures).toEqual(['timeout', 'timeout']);
    expect(limiter.circuit).toBe('open');
    client.disconnect();
  });

  test('a hook that throws never breaks a decision', async () => {
    const client = defaultIoredis();
    let calls = 0;
    const limiter = limiterOn(client, {
      hooks: {
        onDecision: () => {
          calls++;
          throw new Error('metrics backend down');
        },
      },
    });
    const ds = await repeat(3, () => limiter.consume('k'));
    expect(ds.map((d) => [d.allowed, d.reason])).toEqual([
      [true, undefined],
      [true, undefined],
      [false, undefined],
    ]);
    expect(calls).toBe(3);
    client.disconnect();
  });
});

describe('restart and script loss', () => {
  const all = () => [
    fixedWindow({ limit: 3, window: '1m' }),
    slidingLog({ limit: 3, window: '1m' }),
    tokenBucket({ limit: 3, window: '1m' }),
    gcra({ limit: 3, window: '1m' }),
  ];

  test('after SCRIPT FLUSH the next decision runs EVAL and caches the script again', async () => {
    const client = defaultIoredis();
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: all(),
      prefix: `flush${process.pid}`,
      onStoreError: 'closed',
    });
    expect((await limiter.consume('k')).reason).toBeUndefined();
    await client.script('FLUSH');
    // Four of the algorithms: a script made of just those four.
    const script = scriptFor(all().map((p) => p.kind));
    expect(await client.script('EXISTS', script.sha1)).toEqual([0]);
    const d = await limiter.consume('k');
    expect([d.allowed, d.reason, d.remaining]).toEqual([true, undefined, 1]);
    expect(await client.script('EXISTS', script.sha1)).toEqual([1]);
    client.disconnect();
  });

  test.each([
    ['ioredis', 'ioredis'],
    ['node-redis', 'node-redis'],
  ])('after a real restart (%s) decisions succeed again and are exact', async (_label, which) => {
    let close: () => void;
    let client: RedisClient;
    if (which === 'ioredis') {
      const c = defaultIoredis();
      client = c;
      close = () => c.disconnect();
    } else {
      const c = createClient({ url: server.url, socket: { reconnectStrategy: 50 } });
      c.on('error', () => undefined);
      await c.connect();
      client = c;
      close = () => c.destroy();
    }
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      // GCRA 3/h: exact for the whole test, with no aligned window edge to cross mid-test.
      policies: [gcra({ limit: 3, window: '1h' })],
      prefix: `restart${process.pid}${which}`,
      onStoreError: 'closed',
      timeout: 200,
      circuitBreaker: false,
    });
    expect((await repeat(3, () => limiter.consume('k'))).every((d) => d.allowed)).toBe(true);
    await server.restart(); // empty memory, empty script cache
    let first: Decision | undefined;
    for (let i = 0; i < 100; i++) {
      first = await limiter.consume('k');
      if (first.reason === undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // The restarted server lost the counter: the key starts over, exactly.
    expect([first?.allowed, first?.reason, first?.remaining]).toEqual([true, undefined, 2]);
    const rest = await repeat(3, () => limiter.consume('k'));
    expect(rest.map((d) => [d.allowed, d.reason])).toEqual([
      [true, undefined],
      [true, undefined],
      [false, undefined],
    ]);
    close();
  });

  test('the one-kind scripts are cached again after a restart too', async () => {
    const client = defaultIoredis();
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: [gcra({ limit: 3, window: '1m' })],
      prefix: `restart-gcra${process.pid}`,
      circuitBreaker: false,
    });
    await server.restart();
    await untilStoreAnswers(limiter);
    const d = await limiter.consume('k');
    expect(d.reason).toBeUndefined();
    expect(await client.script('EXISTS', scriptFor(['gcra']).sha1)).toEqual([1]);
    client.disconnect();
  });
});

describe('failure options are validated at construction', () => {
  const base = () => ({
    store: memoryStore(),
    policies: [fixedWindow({ limit: 1, window: '1s' })],
  });
  test.each([
    ['timeout', { timeout: 0 }, 'RateLimiter.timeout', 0],
    ['timeout', { timeout: -5 }, 'RateLimiter.timeout', -5],
    ['timeout', { timeout: 'soon' }, 'RateLimiter.timeout', 'soon'],
    ['timeout', { timeout: '30d' }, 'RateLimiter.timeout', '30d'],
    ['timeout', { timeout: null }, 'RateLimiter.timeout', null],
    ['onStoreError', { onStoreError: 'maybe' }, 'RateLimiter.onStoreError', 'maybe'],
    ['onStoreError', { onStoreError: {} }, 'RateLimiter.onStoreError', {}],
    ['circuitBreaker', { circuitBreaker: true }, 'RateLimiter.circuitBreaker', true],
    [
      'circuitBreaker.failureThreshold',
      { circuitBreaker: { failureThreshold: 0 } },
      'RateLimiter.circuitBreaker.failureThreshold',
      0,
    ],
    [
      'circuitBreaker.cooldown',
      { circuitBreaker: { cooldown: '0s' } },
      'RateLimiter.circuitBreaker.cooldown',
      '0s',
    ],
    ['hooks.onDecision', { hooks: { onDecision: 'log' } }, 'RateLimiter.hooks.onDecision', 'log'],
    [
      'hooks (unknown)',
      { hooks: { onDecisions: () => 1 } },
      'RateLimiter.hooks.onDecisions',
      undefined,
    ],
  ])('%s: %p', (_label, extra, field, value) => {
    let caught: unknown;
    try {
      new RateLimiter({ ...base(), ...(extra as object) });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RateLimitConfigError);
    expect((caught as RateLimitConfigError).field).toBe(field);
    if (value !== undefined) expect((caught as RateLimitConfigError).value).toEqual(value);
    expect((caught as Error).message).toContain(field);
  });

  test('valid failure options are accepted', () => {
    const limiter = new RateLimiter({
      ...base(),
      onStoreError: 'closed',
      timeout: '250ms',
      circuitBreaker: { failureThreshold: 2, cooldown: 500 },
      hooks: { onDecision: () => undefined },
    });
    expect(limiter.circuit).toBe('closed');
  });
});
