/**
 * The local cache of denied keys, on a real Redis: a flood from one denied key costs one
 * EVALSHA per retry window, the cached answer is the one the store would give (times counted
 * down), it never answers for a smaller cost or past retryAfter, reset clears it, and it stays
 * bounded. The client wrapper only counts calls; every call reaches the real server.
 */
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis';
import { DeniedCache } from '../../src/denied-cache';
import {
  type Decision,
  fixedWindow,
  gcra,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
} from '../../src/index';

let redis: Redis;
beforeAll(() => {
  redis = connectIoredis();
});
beforeEach(() => flushRedis(redis));
afterAll(() => redis.quit());

/**
 * A real client of its own, counting scripts that ran: a NOSCRIPT answer (another test file may
 * flush the script cache at any time) is not counted, the EVAL that follows it is. The store
 * sends its scripts through `sendCommand`, so that is where they are counted.
 */
const counters: Redis[] = [];
afterAll(() => {
  for (const c of counters.splice(0)) c.disconnect();
});
function countingClient() {
  const client = connectIoredis();
  counters.push(client);
  const counter = { calls: 0, client };
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    const result = send(command, stream) as Promise<unknown>;
    const name = command.name.toLowerCase();
    if (name === 'evalsha' || name === 'eval') {
      result.then(
        () => counter.calls++,
        () => undefined,
      );
    }
    return result;
  };
  return counter;
}

function setup(options: { limit?: number; deniedCache?: unknown } = {}) {
  let now = 1_700_000_000_000;
  const clock = () => now;
  const counter = countingClient();
  const policies = fixedWindow({ limit: options.limit ?? 2, window: '1s' });
  const cached = new RateLimiter({
    store: redisStore({ client: counter.client, clock }),
    policies,
    deniedCache: (options.deniedCache ?? { clock }) as never,
  });
  // Same keys, no cache: what the store itself answers.
  const direct = new RateLimiter({ store: redisStore({ client: redis, clock }), policies });
  return {
    counter,
    cached,
    direct,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const times = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfter: d.retryAfter,
  resetAfter: d.resetAfter,
  policies: d.policies.map((p) => [p.allowed, p.remaining, p.retryAfter, p.resetAfter]),
});

describe('deniedCache', () => {
  it('answers a flood from one denied key with one store call per retry window', async () => {
    const { counter, cached, advance } = setup();
    expect((await cached.consume('flooder')).allowed).toBe(true);
    expect((await cached.consume('flooder')).allowed).toBe(true);
    const denied = await cached.consume('flooder');
    expect(denied.allowed).toBe(false);
    expect(counter.calls).toBe(3);
    for (let i = 0; i < 50; i++) expect((await cached.consume('flooder')).allowed).toBe(false);
    expect(counter.calls).toBe(3);
    // Once the window has passed, the store is asked again and admits.
    advance(denied.retryAfter);
    expect((await cached.consume('flooder')).allowed).toBe(true);
    expect(counter.calls).toBe(4);
  });

  it('answers what the store would answer, with times counted down', async () => {
    const { cached, direct, advance } = setup();
    const key = 'user:7';
    await cached.consume(key);
    await cached.consume(key);
    const first = await cached.consume(key);
    advance(250.5);
    const fromCache = await cached.consume(key);
    const fromStore = await direct.peek(key);
    expect(fromCache.allowed).toBe(false);
    expect(times(fromCache)).toEqual(times(fromStore));
    expect(fromCache.retryAfter).toBeCloseTo(first.retryAfter - 250.5, 6);
  });

  it('never answers for a smaller cost than the one denied', async () => {
    const { counter, cached } = setup({ limit: 3 });
    await cached.consume('k', { cost: 2 });
    expect((await cached.consume('k', { cost: 2 })).allowed).toBe(false);
    const calls = counter.calls;
    // Cost 1 still fits (1 left): the cache must not answer it.
    expect((await cached.consume('k', { cost: 1 })).allowed).toBe(true);
    expect(counter.calls).toBe(calls + 1);
    // A larger cost than the denied one is denied from the cache.
    expect((await cached.consume('k', { cost: 3 })).allowed).toBe(false);
    expect(counter.calls).toBe(calls + 1);
  });

  it('is cleared by reset through the same limiter', async () => {
    const { counter, cached } = setup({ limit: 1 });
    await cached.consume('k');
    expect((await cached.consume('k')).allowed).toBe(false);
    await cached.reset('k');
    const calls = counter.calls;
    expect((await cached.consume('k')).allowed).toBe(true);
    expect(counter.calls).toBe(calls + 1);
  });

  it('serves peek from the cache too, and peek denials fill it', async () => {
    const { counter, cached } = setup({ limit: 1 });
    await cached.consume('k');
    expect((await cached.peek('k')).allowed).toBe(false);
    const calls = counter.calls;
    expect((await cached.consume('k')).allowed).toBe(false);
    expect((await cached.peek('k')).allowed).toBe(false);
    expect(counter.calls).toBe(calls);
  });

  it('holds at most maxKeys keys, dropping the oldest', async () => {
    let now = 1_700_000_000_000;
    const clock = () => now;
    const limiter = new RateLimiter({
      store: redisStore({ client: redis, clock }),
      policies: gcra({ limit: 1, window: '1m' }),
      deniedCache: { maxKeys: 2, clock },
    });
    for (const key of ['a', 'b', 'c']) {
      await limiter.consume(key);
      expect((await limiter.consume(key)).allowed).toBe(false);
    }
    expect(limiter.deniedCache?.size).toBe(2);
    now += 1;
    expect(limiter.deniedCache?.lookup('a', 1)).toBeUndefined();
    expect(limiter.deniedCache?.lookup('c', 1)?.allowed).toBe(false);
  });

  it('is off unless asked for, and its options are validated', () => {
    const store = redisStore({ client: redis });
    const policies = gcra({ limit: 1, window: '1s' });
    expect(new RateLimiter({ store, policies }).deniedCache).toBeUndefined();
    expect(new RateLimiter({ store, policies, deniedCache: true }).deniedCache).toBeInstanceOf(
      DeniedCache,
    );
    expect(() => new RateLimiter({ store, policies, deniedCache: 'yes' as never })).toThrow(
      expect.objectContaining({
        code: 'FLOODGATE_INVALID_OPTION',
        field: 'RateLimiter.deniedCache',
      }),
    );
    expect(() => new RateLimiter({ store, policies, deniedCache: { maxKeys: 0 } })).toThrow(
      RateLimitConfigError,
    );
    expect(() => new RateLimiter({ store, policies, deniedCache: { size: 3 } as never })).toThrow(
      expect.objectContaining({ code: 'FLOODGATE_UNKNOWN_OPTION' }),
    );
  });
});

describe('deniedCache and blocks', () => {
  function blockSetup() {
    let now = 1_700_000_000_000;
    const clock = () => now;
    const counter = countingClient();
    const limiter = new RateLimiter({
      store: redisStore({ client: counter.client, clock }),
      policies: fixedWindow({ limit: 1, window: '1s', blockDuration: '10s' }),
      deniedCache: { clock, maxAge: '1m' },
    });
    return { counter, limiter, advance: (ms: number) => (now += ms) };
  }

  it('answers a blocked key from the cache for every cost until the block ends', async () => {
    const { counter, limiter, advance } = blockSetup();
    await limiter.consume('k');
    const locked = await limiter.consume('k');
    expect(locked).toMatchObject({ allowed: false, reason: 'blocked', retryAfter: 10_000 });
    const calls = counter.calls;
    advance(4000);
    for (const cost of [0, 1, 5]) {
      expect(await limiter.consume('k', { cost })).toMatchObject({
        reason: 'blocked',
        retryAfter: 6000,
      });
    }
    expect(counter.calls).toBe(calls);
    advance(6000);
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect(counter.calls).toBe(calls + 1);
  });

  it('is cleared by unblock in this process, and block replaces a cached denial', async () => {
    const { counter, limiter } = blockSetup();
    await limiter.block('k', 'forever');
    expect(await limiter.consume('k')).toMatchObject({ reason: 'blocked', retryAfter: -1 });
    expect(await limiter.consume('k')).toMatchObject({ reason: 'blocked', retryAfter: -1 });
    await limiter.unblock('k');
    const calls = counter.calls;
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect(counter.calls).toBe(calls + 1);
    await limiter.block('k', '1m');
    expect(await limiter.consume('k')).toMatchObject({ reason: 'blocked', retryAfter: 60_000 });
  });
});
