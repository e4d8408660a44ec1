/**
 * redisStore's batching, on a real Redis of its own: what goes over the wire (counted by a thin
 * wrapper that forwards every call to the real ioredis client), the bounds, per-decision
 * failures and NOSCRIPT recovery. Exactness in batched mode is the differential, conformance,
 * multi-process and cluster suites' job (each runs batched too).
 */
import {
  fixedWindow,
  gcra,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
} from '../../../src/index';
import { ownRedis, type Sent } from './batch-recording';

const { testRedis, recording } = ownRedis();

const evalshas = (sent: Sent[]) => sent.filter((s) => s.command === 'evalsha');

test('decisions made in one tick go out as batch script calls, the first 8 at once', async () => {
  const { wrapper, sent } = recording();
  const limiter = new RateLimiter({
    store: redisStore({ client: wrapper }),
    policies: [fixedWindow({ limit: 100, window: '1m' })],
    prefix: 'batch1',
  });
  const first = limiter.consume('a');
  const rest = Array.from({ length: 20 }, (_, i) => limiter.consume(`k${i % 5}`));
  const decisions = await Promise.all([first, ...rest]);
  expect(decisions.every((d) => d.allowed && d.reason === undefined)).toBe(true);
  // All 21 were made in one tick with nothing in flight: two EVALSHAs of the batch script, the
  // first 8 calls as soon as the 8th was made (Redis decides them while the rest are made) and
  // the other 13 at the end of the tick, in call order, each call with its policy key and block
  // key; both met NOSCRIPT and were re-sent with EVAL, in order.
  expect(evalshas(sent).map((s) => [s.script, s.keys, s.inFlight])).toEqual([
    ['fixed-window-batch', 16, 0],
    ['fixed-window-batch', 26, 1],
  ]);
  expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual([
    ...['evalsha:16', 'evalsha:26', 'eval:16', 'eval:26'],
  ]);
  // Counts are exact: key k0 was charged 5 times.
  const d = await limiter.peek('k0');
  expect(d.remaining).toBe(95);
  // Below SEND_NOW_AT (8) calls, one piece at the end of the tick.
  sent.length = 0;
  await Promise.all(Array.from({ length: 7 }, (_, i) => limiter.consume(`k${i}`)));
  expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual(['evalsha:14']);
});

test('a lone decision goes out at once, as a single script call', async () => {
  const { wrapper, sent } = recording();
  const limiter = new RateLimiter({
    store: redisStore({ client: wrapper }),
    policies: [gcra({ limit: 10, window: '1s' })],
    prefix: 'batch2',
  });
  const decision = limiter.consume('alone');
  // Sent within the tick it was made in, before any timer or I/O turn.
  await new Promise((resolve) => process.nextTick(resolve));
  expect(sent.map((s) => [s.command, s.script])).toEqual([['evalsha', 'gcra']]);
  expect((await decision).allowed).toBe(true);
  // The next lone call, after the reply, goes alone too.
  await limiter.consume('alone');
  expect(evalshas(sent).map((s) => s.script)).toEqual(['gcra', 'gcra']);
});

test('calls made while a batch is in flight wait for its reply, then go together', async () => {
  const { wrapper, sent } = recording();
  const limiter = new RateLimiter({
    store: redisStore({ client: wrapper }),
    policies: [fixedWindow({ limit: 100, window: '1m' })],
    prefix: 'batch3',
  });
  await limiter.consume('warm'); // the script is cached from here on
  sent.length = 0;
  const first = limiter.consume('x');
  // Made in later turns of the event loop, while `first` is still in flight.
  const later: Array<Promise<unknown>> = [];
  await new Promise((resolve) => setImmediate(resolve));
  for (let i = 0; i < 6; i++) later.push(limiter.consume(`y${i}`));
  await Promise.all([first, ...later]);
  const calls = evalshas(sent);
  if (calls.length === 2) {
    // `first` was still in flight when the six were made: they went out as one batch.
    // (Each call sends its policy key and its block key.)
    expect(calls.map((s) => [s.script, s.keys])).toEqual([
      ['fixed-window', 2],
      ['fixed-window-batch', 12],
    ]);
  } else {
    // The reply had already arrived (fast machine): still one batch for the six.
    expect(calls.map((s) => s.keys)).toEqual([2, 12]);
  }
});

test('a batch is bounded by maxDecisions and by maxBytes', async () => {
  const { wrapper, sent } = recording();
  const byCount = new RateLimiter({
    store: redisStore({ client: wrapper, batch: { maxDecisions: 4 } }),
    policies: [fixedWindow({ limit: 100, window: '1m' })],
    prefix: 'batch4',
  });
  await Promise.all(Array.from({ length: 10 }, (_, i) => byCount.consume(`k${i}`)));
  // Two keys per call: its policy's and its block state's.
  expect(evalshas(sent).map((s) => s.keys)).toEqual([8, 8, 4]);
  sent.length = 0;
  const byBytes = new RateLimiter({
    store: redisStore({ client: wrapper, batch: { maxBytes: 190 } }),
    policies: [fixedWindow({ limit: 100, window: '1m' })],
    prefix: 'batch5',
  });
  // Each call is its two keys and ARGV, ~90 characters: two fit in 190, three do not.
  await Promise.all(Array.from({ length: 6 }, (_, i) => byBytes.consume(`user-${i}`)));
  expect(evalshas(sent).map((s) => s.keys)).toEqual([4, 4, 4]);
});

test('batch: false sends one EVALSHA per decision', async () => {
  const { wrapper, sent } = recording();
  const limiter = new RateLimiter({
    store: redisStore({ client: wrapper, batch: false }),
    policies: [fixedWindow({ limit: 100, window: '1m' })],
    prefix: 'batch6',
  });
  await Promise.all(Array.from({ length: 5 }, (_, i) => limiter.consume(`k${i}`)));
  expect(evalshas(sent).map((s) => [s.script, s.keys])).toEqual(
    new Array(5).fill(['fixed-window', 2]),
  );
});

test('one failing decision never fails its neighbours in the batch', async () => {
  const redis = testRedis();
  const limiter = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 3, window: '1m' })],
    prefix: 'batch7',
    onStoreError: 'closed',
  });
  // The state of `broken` is a hash: its GET fails with WRONGTYPE inside the batch script.
  await redis.hset(limiter.storageKeys('broken')[0]!, 'x', '1');
  const keys = ['a', 'broken', 'a', 'b', 'broken', 'a', 'a'];
  const decisions = await Promise.all(keys.map((k) => limiter.consume(k)));
  expect(decisions.map((d) => [d.allowed, d.reason])).toEqual([
    [true, undefined],
    [false, 'store-error'],
    [true, undefined],
    [true, undefined],
    [false, 'store-error'],
    [true, undefined],
    [false, undefined],
  ]);
});

test("a batch of lone fixedWindow consumes counts exactly and leaves every key with its window's TTL", async () => {
  const redis = testRedis();
  const { wrapper, sent } = recording();
  // limit 3: the count and its window in one integer (layout 1); 1e12: the count alone at
  // <base>:<window index> (layout 0), whose first count gets its TTL from a PEXPIRE.
  const small = new RateLimiter({
    store: redisStore({ client: wrapper }),
    policies: [fixedWindow({ limit: 3, window: '1h' })],
    prefix: 'batch9a',
  });
  const large = new RateLimiter({
    store: redisStore({ client: wrapper }),
    policies: [fixedWindow({ limit: 1e12, window: '1h' })],
    prefix: 'batch9b',
  });
  const keys = Array.from({ length: 24 }, (_, i) => `u${i % 6}`);
  const [a, b] = await Promise.all([
    Promise.all(keys.map((k) => small.consume(k))),
    Promise.all(keys.map((k) => large.consume(k, { cost: 2 }))),
  ]);
  // Most calls went in batches (the first of each limiter alone, as a single call).
  expect(evalshas(sent).filter((s) => s.script === 'fixed-window-batch').length).toBeGreaterThan(0);
  // Each key: 4 calls, 3 admitted by the small limiter; all 4 by the large one (2 units each).
  for (let u = 0; u < 6; u++) {
    const mine = (d: typeof a) => d.filter((_, i) => keys[i] === `u${u}`);
    expect(mine(a).map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(mine(b).map((d) => d.remaining)).toEqual([1e12 - 2, 1e12 - 4, 1e12 - 6, 1e12 - 8]);
  }
  // Six counts each (no block was written, so no block key exists).
  const stored = [...(await redis.keys('batch9a:*')), ...(await redis.keys('batch9b:*'))];
  expect(stored.length).toBe(12);
  for (const key of stored) {
    const pttl = await redis.pttl(key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(3_600_000);
  }
});

test('NOSCRIPT: each batch recovers with EVAL after SCRIPT FLUSH, without charging twice', async () => {
  const redis = testRedis();
  const { wrapper, sent } = recording();
  const limiter = new RateLimiter({
    store: redisStore({ client: wrapper, batch: { maxDecisions: 3 } }),
    policies: [fixedWindow({ limit: 100, window: '1m' })],
    prefix: 'batch8',
  });
  for (let round = 0; round < 2; round++) {
    await redis.script('FLUSH');
    const decisions = await Promise.all(Array.from({ length: 7 }, () => limiter.consume('k')));
    expect(decisions.map((d) => d.remaining)).toEqual(
      Array.from({ length: 7 }, (_, i) => 100 - round * 7 - i - 1),
    );
  }
  // Three batches per round were in flight together: all three got NOSCRIPT and were re-sent
  // with EVAL, in order.
  expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual([
    ...['evalsha:6', 'evalsha:6', 'evalsha:2', 'eval:6', 'eval:6', 'eval:2'],
    ...['evalsha:6', 'evalsha:6', 'evalsha:2', 'eval:6', 'eval:6', 'eval:2'],
  ]);
});

test('batching options are validated at construction, naming the field', () => {
  const client = testRedis();
  const codeOf = (batch: unknown): [string, string] => {
    try {
      redisStore({ client, batch } as never);
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitConfigError);
      const e = error as RateLimitConfigError;
      return [e.code, e.field];
    }
    throw new Error('accepted');
  };
  expect(codeOf('yes')).toEqual(['FLOODGATE_INVALID_OPTION', 'redisStore.batch']);
  expect(codeOf({ maxDecisions: 0 })).toEqual([
    'FLOODGATE_INVALID_OPTION',
    'redisStore.batch.maxDecisions',
  ]);
  expect(codeOf({ maxBytes: 1.5 })).toEqual([
    'FLOODGATE_INVALID_OPTION',
    'redisStore.batch.maxBytes',
  ]);
  expect(codeOf({ size: 3 })).toEqual(['FLOODGATE_UNKNOWN_OPTION', 'redisStore.batch.size']);
  expect(redisStore({ client, batch: false }).batch).toBeUndefined();
  expect(redisStore({ client }).batch).toEqual({ maxDecisions: 128, maxBytes: 65536 });
});
