/**
 * `redisStore({ client, scripts: 'functions' })`: every assembled script loads as a Redis
 * Functions library of its own, the conformance table decides the same through FCALL (one call
 * at a time and batched), a function lost on the server (FUNCTION FLUSH) is loaded again and the
 * call re-sent once, never charged twice, and the option is validated.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { useOwnRedisServer } from '../../../../../test/harness/redis';
import {
  ConcurrencyLimiter,
  fixedWindow,
  gcra,
  RateLimitConfigError,
  RateLimiter,
  RateLimitStoreError,
  redisStore,
  slidingLog,
  tokenBucket,
} from '../../../src/index';
import {
  FUNCTION_PREFIX,
  functionLibrary,
  functionName,
} from '../../../src/stores/redis-functions';
import { combinedScriptFor, fixedScripts, scriptFor } from '../../../src/stores/scripts';
import { SCENARIOS } from '../../conformance/algorithms/index';
import { describeConformance } from '../../conformance/table';

jest.setTimeout(30_000);

const own = useOwnRedisServer();
const redis = () => own().client;
let prefixes = 0;
const prefix = (what: string) => `${what}-${process.pid}-${prefixes++}`;

/** The Floodgate libraries the server holds, by name. */
async function libraries(): Promise<string[]> {
  const list = (await redis().call(
    'FUNCTION',
    'LIST',
    'LIBRARYNAME',
    `${FUNCTION_PREFIX}*`,
  )) as unknown[][];
  return list.map((entry) => String(entry[entry.indexOf('library_name') + 1])).sort();
}

/** Calls of `command` the server counted (INFO commandstats), e.g. 'fcall'. */
async function calls(command: string): Promise<number> {
  const info = String(await redis().call('INFO', 'commandstats'));
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

beforeEach(async () => {
  await redis().call('FUNCTION', 'FLUSH');
  await redis().call('SCRIPT', 'FLUSH');
});

test('every pinned script, and a mixed one, loads as a library of one function named by its SHA1', async () => {
  const scripts = [...fixedScripts(), scriptFor(['gcra', 'token-bucket'])];
  for (const s of scripts) {
    expect(await redis().call('FUNCTION', 'LOAD', functionLibrary(s.source, s.sha1))).toBe(
      functionName(s.sha1),
    );
  }
  expect(await libraries()).toEqual(scripts.map((s) => functionName(s.sha1)).sort());
});

describeConformance('scripts: functions', SCENARIOS, (clock) =>
  redisStore({ client: redis(), clock, batch: false, scripts: 'functions' }),
);
describeConformance(
  'scripts: functions, batched',
  SCENARIOS,
  (clock) =>
    redisStore({ client: redis(), clock, batch: { maxDecisions: 4 }, scripts: 'functions' }),
  'at once',
);

test('decisions run by FCALL only: no EVALSHA, no EVAL, no NOSCRIPT; the library is loaded once', async () => {
  const before = { evalsha: await calls('evalsha'), eval: await calls('eval') };
  const limiter = new RateLimiter({
    store: redisStore({ client: redis(), scripts: 'functions', batch: false }),
    policies: [fixedWindow({ limit: 3, window: '1m' }), gcra({ limit: 3, window: '1m' })],
    prefix: prefix('fcall'),
    onStoreError: 'closed',
  });
  const decisions = [];
  for (let i = 0; i < 5; i++) decisions.push(await limiter.consume('k'));
  expect(decisions.map((d) => [d.allowed, d.reason])).toEqual([
    [true, undefined],
    [true, undefined],
    [true, undefined],
    [false, undefined],
    [false, undefined],
  ]);
  // Two string states share one key: the combined script (lua/include/combined.lua).
  const script = combinedScriptFor(['fixed-window', 'gcra']);
  expect(await libraries()).toEqual([functionName(script.sha1)]);
  expect(await calls('evalsha')).toBe(before.evalsha);
  // The clock probe is the one EVAL (redis-time.ts), not a decision.
  expect((await calls('eval')) - before.eval).toBeLessThanOrEqual(1);
  expect(String(await redis().call('INFO', 'errorstats'))).not.toContain('NOSCRIPT');
});

test.each([
  ['one call at a time', false],
  ['batched', true],
] as const)(
  'FUNCTION FLUSH between decisions (%s): loaded again, re-sent once, each decision charged exactly once',
  async (_mode, batch) => {
    const limiter = new RateLimiter({
      store: redisStore({ client: redis(), scripts: 'functions', batch }),
      policies: [fixedWindow({ limit: 10, window: '1h' })],
      prefix: prefix('flush'),
      onStoreError: 'closed',
    });
    const results = [];
    for (let round = 0; round < 3; round++) {
      await redis().call('FUNCTION', 'FLUSH');
      const fcalls = await calls('fcall');
      results.push(await limiter.consume('k'));
      // The FCALL that found no function, then the one after FUNCTION LOAD.
      expect((await calls('fcall')) - fcalls).toBe(2);
      results.push(await limiter.consume('k'));
    }
    expect(results.map((d) => [d.allowed, d.reason, d.remaining])).toEqual(
      [9, 8, 7, 6, 5, 4].map((remaining) => [true, undefined, remaining]),
    );
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 3 });
  },
);

test('FUNCTION FLUSH while 200 decisions are in flight: exactly the limit admitted, no store error', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: redis(), scripts: 'functions' }),
    policies: [tokenBucket({ limit: 50, window: '1h' }), slidingLog({ limit: 60, window: '1h' })],
    prefix: prefix('inflight'),
    onStoreError: 'closed',
  });
  const decisions = await Promise.all(
    Array.from({ length: 200 }, (_, i) => {
      if (i % 40 === 20) void redis().call('FUNCTION', 'FLUSH');
      return limiter.consume('k');
    }),
  );
  expect(decisions.filter((d) => d.reason !== undefined)).toEqual([]);
  expect(decisions.filter((d) => d.allowed)).toHaveLength(50);
});

test('leases (ConcurrencyLimiter) run as functions too', async () => {
  const limiter = new ConcurrencyLimiter({
    store: redisStore({ client: redis(), scripts: 'functions' }),
    limit: 2,
    leaseTtl: '30s',
    prefix: prefix('leases'),
    onStoreError: 'closed',
  });
  const held = await Promise.all([1, 2, 3].map(() => limiter.acquire('k')));
  expect(held.map((d) => [d.allowed, d.reason])).toEqual([
    [true, undefined],
    [true, undefined],
    [false, undefined],
  ]);
  await redis().call('FUNCTION', 'FLUSH');
  expect(await held[0]!.lease!.release()).toBe(true);
  expect(await limiter.acquire('k')).toMatchObject({ allowed: true });
  expect((await libraries()).length).toBeGreaterThan(0);
});

test("another version's library beside this one is left alone (its name is its own SHA1)", async () => {
  const older = scriptFor(['gcra']);
  const changed = `${older.source}-- an older Floodgate\n`;
  const olderName = functionName('0'.repeat(40));
  await redis().call('FUNCTION', 'LOAD', functionLibrary(changed, '0'.repeat(40)));
  const limiter = new RateLimiter({
    store: redisStore({ client: redis(), scripts: 'functions', batch: false }),
    policies: [gcra({ limit: 3, window: '1m' })],
    prefix: prefix('versions'),
  });
  expect((await limiter.consume('k')).reason).toBeUndefined();
  expect(await libraries()).toEqual([olderName, functionName(older.sha1)].sort());
});

test('a Redis error inside a function is a store error the failure policy answers', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: redis(), scripts: 'functions', batch: false }),
    policies: [gcra({ limit: 3, window: '1m' })],
    prefix: prefix('wrongtype'),
    onStoreError: 'closed',
    circuitBreaker: false,
  });
  const [key] = limiter.storageKeys('k');
  await redis().rpush(key!, 'not a timestamp');
  const prepared = limiter.store.prepare(limiter.policies);
  const error = await prepared.decide(limiter.storageKeys('k'), 1, false).catch((e) => e);
  expect(error).toBeInstanceOf(RateLimitStoreError);
  // Traced back to its lua/ line as an EVALSHA's error is (script-error-lines.test.ts).
  const found = /WRONGTYPE.*user_function:(\d+)\b.*\(lua\/gcra\.lua:(\d+)\)/s.exec(
    (error as Error).message,
  );
  expect(found).not.toBeNull();
  const library = functionLibrary(scriptFor(['gcra']).source, scriptFor(['gcra']).sha1);
  const ran = library.split('\n')[Number(found![1]) - 1]!;
  expect(ran).toContain("redis.call('GET', key)");
  const source = readFileSync(join(__dirname, '../../../../../lua/gcra.lua'), 'utf8');
  expect(source.split('\n')[Number(found![2]) - 1]!.trim()).toBe(ran.trim());
  expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'store-error' });
});

test.each([['fcall'], [''], [true], [null]])(
  'scripts: %p is refused at redisStore() with a coded error naming the field',
  (value) => {
    let caught: unknown;
    try {
      redisStore({ client: redis(), scripts: value as never });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RateLimitConfigError);
    expect(caught).toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: 'redisStore.scripts',
      value,
    });
  },
);

test('an ACL user that may not FUNCTION LOAD gets store errors naming NOPERM, answered by the failure policy', async () => {
  const user = `fg-no-load-${process.pid}`;
  await redis().call('ACL', 'SETUSER', user, 'on', '>secret', '~*', '+@all', '-function|load');
  const limited = new Redis(own().server.port, { username: user, password: 'secret' });
  try {
    const limiter = new RateLimiter({
      store: redisStore({ client: limited, scripts: 'functions', batch: false }),
      policies: [gcra({ limit: 3, window: '1m' })],
      prefix: prefix('acl'),
      onStoreError: 'closed',
      circuitBreaker: false,
    });
    const prepared = limiter.store.prepare(limiter.policies);
    const error = await prepared.decide(limiter.storageKeys('k'), 1, false).catch((e) => e);
    expect(error).toBeInstanceOf(RateLimitStoreError);
    expect((error as Error).message).toMatch(/NOPERM/);
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, reason: 'store-error' });
  } finally {
    limited.disconnect();
    await redis().call('ACL', 'DELUSER', user);
  }
});
