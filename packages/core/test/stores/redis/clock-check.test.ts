/**
 * A store whose clock cannot be trusted refuses to decide: Redis TIME answering 0 inside
 * scripts (as Dragonfly does) or going backwards, and with `time: 'client'` an app server's
 * clock too far from the store's. Emulated by a client shim that wraps a real node-redis
 * client and rewrites what TIME answers, inside scripts and as a command.
 */

import { createHash } from 'node:crypto';
import { configErrorOf } from '@floodgate/http-test-kit';
import { createClient } from 'redis';
import { useOwnRedisServer } from '../../../../../test/harness/redis.js';
import {
  ConcurrencyLimiter,
  fixedWindow,
  RateLimiter,
  type RateLimitStoreError,
  redisStore,
  type StoreErrorEvent,
} from '../../../src/index.js';
import type { RedisClient } from '../../../src/stores/redis-client.js';
import { CLOCK_CHECK_INTERVAL_MS } from '../../../src/stores/redis-time.js';
import { readPinnedScripts } from '../../lua/pinned.js';

const own = useOwnRedisServer();

/** What the emulated server's TIME answers inside scripts and as a command: 0, or its real time shifted by this many seconds. */
interface FakeTime {
  scripts: 'zero' | number;
  command: 'zero' | number;
}

/**
 * A node-redis client in front of the real one: every script runs with its `TIME` rewritten
 * (sent as EVAL, since its SHA1 no longer matches), and so does the TIME command.
 */
function timeRewritingClient(real: ReturnType<typeof createClient>, time: FakeTime): RedisClient {
  const fakeTime = () =>
    time.scripts === 'zero'
      ? "{'0', '0'}"
      : `(function() local t = redis.call('TIME') return {tostring(tonumber(t[1]) + ${time.scripts}), t[2]} end)()`;
  const sendCommand = async (args: string[]): Promise<unknown> => {
    const [command] = args;
    if (command === 'EVALSHA') throw new Error('NOSCRIPT No matching script. Please use EVAL.');
    if (command === 'EVAL') {
      const source = args[1]!.replaceAll("redis.call('TIME')", fakeTime());
      return real.sendCommand(['EVAL', source, ...args.slice(2)]);
    }
    if (command === 'TIME') {
      if (time.command === 'zero') return ['0', '0'];
      const [seconds, micros] = (await real.sendCommand(['TIME'])) as [string, string];
      return [String(Number(seconds) + time.command), micros];
    }
    return real.sendCommand(args);
  };
  // Typed as the store sees a node-redis client (its sendCommand is not part of that type).
  const shim = {
    evalSha: () => Promise.reject(new Error('not used')),
    eval: () => Promise.reject(new Error('not used')),
    sendCommand,
  };
  return shim;
}

let real: ReturnType<typeof createClient>;
beforeAll(async () => {
  real = createClient({ url: own().server.url });
  real.on('error', () => undefined);
  await real.connect();
});
afterAll(() => {
  real?.destroy();
});
beforeEach(async () => {
  await real.flushAll();
});
afterEach(() => {
  jest.restoreAllMocks();
});

let prefixes = 0;
function limiterOn(
  client: RedisClient,
  onStoreError: 'open' | 'closed',
  options: { time?: 'client'; maxClockSkew?: `${number}s` } = {},
) {
  const errors: RateLimitStoreError[] = [];
  const limiter = new RateLimiter({
    store: redisStore({ client, batch: false, ...options }),
    policies: fixedWindow({ limit: 3, window: '1m' }),
    prefix: `clock${prefixes++}`,
    onStoreError,
    circuitBreaker: false,
    hooks: { onStoreError: (event: StoreErrorEvent) => errors.push(event.error) },
  });
  return { limiter, errors };
}

/** Moves the clock the store schedules its checks by (performance.now) `ms` ahead. */
function advanceChecks(ms: number): void {
  const now = performance.now.bind(performance);
  jest.spyOn(performance, 'now').mockImplementation(() => now() + ms);
}

describe("time: 'redis' (the default)", () => {
  test('the probe is lua/probes/clock.lua as the assembler builds it, under its pinned SHA1', async () => {
    const evals: string[] = [];
    const recording: RedisClient = {
      evalSha: () => Promise.reject(new Error('not used')),
      eval: () => Promise.reject(new Error('not used')),
      sendCommand: (args: string[]) => {
        if (args[0] === 'EVAL') evals.push(args[1]!);
        return real.sendCommand(args);
      },
    } as unknown as RedisClient;
    const { limiter, errors } = limiterOn(recording, 'closed');
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 2 });
    expect(errors).toEqual([]);
    const probe = evals.find(
      (source) => source.includes("redis.call('TIME')") && !source.includes('read_call'),
    );
    expect(probe?.split('\n')[0]).toBe('-- >>> lua/probes/clock.lua');
    const pinned = readPinnedScripts().find((script) => script.name === 'clock-probe');
    expect(pinned).toBeDefined();
    expect(createHash('sha1').update(probe!).digest('hex')).toBe(pinned!.sha1);
  });

  test.each(['open', 'closed'] as const)(
    'TIME answering 0 inside scripts: refused with a clear error, never admitted (%s)',
    async (policy) => {
      const time = { scripts: 'zero', command: 'zero' } as FakeTime;
      const { limiter, errors } = limiterOn(timeRewritingClient(real, time), policy);
      for (let i = 0; i < 5; i++) {
        expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'store-error' });
      }
      expect(errors).toHaveLength(5);
      for (const error of errors) {
        expect(error).toMatchObject({ code: 'FLOODGATE_STORE_ERROR', misconfigured: true });
        expect(error.message).toContain('TIME inside a script answered 1970-01-01T00:00:00.000Z');
        expect(error.message).toContain("time: 'client'");
      }
    },
  );

  test('a healthy TIME decides as usual; a TIME that then goes back an hour is refused', async () => {
    const time = { scripts: 0, command: 0 } as FakeTime;
    const { limiter, errors } = limiterOn(timeRewritingClient(real, time), 'open');
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 2 });
    expect(errors).toEqual([]);
    // A failover to a node whose clock is an hour behind, noticed at the next check.
    time.scripts = -3600;
    advanceChecks(CLOCK_CHECK_INTERVAL_MS + 1);
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'store-error' });
    expect(errors[0]).toMatchObject({ misconfigured: true });
    expect(errors[0]!.message).toMatch(/TIME went backwards by 3\d{6} ms/);
  });

  test('batched decisions are refused alike', async () => {
    const client = timeRewritingClient(real, { scripts: 'zero', command: 'zero' } as FakeTime);
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: true }),
      policies: fixedWindow({ limit: 3, window: '1m' }),
      prefix: `clock-batched${prefixes++}`,
      onStoreError: 'open',
      circuitBreaker: false,
    });
    const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.consume('k')));
    for (const d of decisions) expect(d).toMatchObject({ allowed: false, reason: 'store-error' });
  });

  test('decisions resume once the clock is fixed', async () => {
    const time = { scripts: 'zero', command: 'zero' } as FakeTime;
    const { limiter } = limiterOn(timeRewritingClient(real, time), 'closed');
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'store-error' });
    time.scripts = 0;
    advanceChecks(CLOCK_CHECK_INTERVAL_MS + 1);
    await real.flushAll(); // the refused decision did run, at time 0
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 2 });
  });

  test('leases are refused on a broken TIME too', async () => {
    const client = timeRewritingClient(real, { scripts: 'zero', command: 'zero' } as FakeTime);
    const limiter = new ConcurrencyLimiter({
      store: redisStore({ client }),
      limit: 2,
      leaseTtl: '10s',
      prefix: `clock-leases${prefixes++}`,
      onStoreError: 'open',
    });
    expect(await limiter.acquire('k')).toMatchObject({ allowed: false, reason: 'store-error' });
  });
});

describe("time: 'client'", () => {
  test("decides on this server's clock where scripts cannot read TIME (it answers 0)", async () => {
    // Scripts see TIME 0 (never read with time: 'client'); the TIME command answers right.
    const client = timeRewritingClient(real, { scripts: 'zero', command: 0 });
    const { limiter, errors } = limiterOn(client, 'closed', { time: 'client' });
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('k'));
    expect(decisions.map((d) => [d.allowed, d.remaining, d.reason])).toEqual([
      [true, 2, undefined],
      [true, 1, undefined],
      [true, 0, undefined],
      [false, 0, undefined],
    ]);
    expect(errors).toEqual([]);
  });

  test.each([
    [5, undefined, false],
    [-5, undefined, false],
    [5, '10s' as const, true],
  ])(
    'a store clock %i s away, maxClockSkew %s: decides %s',
    async (shiftSeconds, maxClockSkew, decides) => {
      const client = timeRewritingClient(real, { scripts: 0, command: shiftSeconds });
      const options = maxClockSkew
        ? { time: 'client' as const, maxClockSkew }
        : { time: 'client' as const };
      const { limiter, errors } = limiterOn(client, 'open', options);
      const d = await limiter.consume('k');
      if (decides) {
        expect(d).toMatchObject({ allowed: true, remaining: 2 });
        expect(errors).toEqual([]);
      } else {
        expect(d).toMatchObject({ allowed: false, reason: 'store-error' });
        expect(errors[0]).toMatchObject({ misconfigured: true });
        expect(errors[0]!.message).toMatch(
          /clock is \d+ ms away from the store's TIME, more than maxClockSkew \(1000 ms\)/,
        );
      }
    },
  );
});

describe('options', () => {
  const client = () => timeRewritingClient(real, { scripts: 0, command: 0 } as FakeTime);
  test.each([
    ['time', { time: 'server' }, 'redisStore.time'],
    ['time with a clock', { time: 'client', clock: () => 0 }, 'redisStore.time'],
    ['maxClockSkew without time: client', { maxClockSkew: '1s' }, 'redisStore.maxClockSkew'],
    ['a negative maxClockSkew', { time: 'client', maxClockSkew: -1 }, 'redisStore.maxClockSkew'],
  ])('%s is refused at construction', (_label, options, field) => {
    const error = configErrorOf(() => redisStore({ client: client(), ...(options as object) }));
    expect(error).toMatchObject({ code: 'FLOODGATE_INVALID_OPTION', field });
  });
});
