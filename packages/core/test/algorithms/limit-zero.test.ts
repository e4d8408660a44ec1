/**
 * `limit: 0` is a valid policy that admits nothing (a maintenance switch, docs/algorithms.md#limit-0):
 * every factory takes it with the rest of its options, and nothing is ever written for it, in
 * Redis or in memory, alone or beside other policies. The decisions themselves are in the
 * conformance table (limitZeroScenario) and the differential test.
 */
import { keysWithTtl, useTestRedis } from '../../../../test/harness/redis';
import {
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  type Policy,
  RateLimiter,
  redisStore,
  type Store,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../src/index';
import { configErrorOf } from '../config-error';

const testRedis = useTestRedis();

/** Every algorithm switched off, each with the sizing options it had before the switch. */
const switchedOff = (): Array<[string, Policy]> => [
  ['fixedWindow', fixedWindow({ limit: 0, window: '1m' })],
  ['fixedWindow first-request', fixedWindow({ limit: 0, window: '1m', anchor: 'first-request' })],
  ['slidingLog', slidingLog({ limit: 0, window: '1m' })],
  ['slidingWindow', slidingWindow({ limit: 0, window: '1m', buckets: 6 })],
  ['tokenBucket', tokenBucket({ limit: 0, window: '1s', burst: 50 })],
  ['gcra', gcra({ limit: 0, window: '1s', burst: 20 })],
  ['leakyBucket', leakyBucket({ limit: 0, window: '1s', burst: 20, delay: 5 })],
  ['smoothBursty', smoothBursty({ limit: 0, window: '1s', maxBurst: '5s' })],
  ['smoothWarmingUp', smoothWarmingUp({ limit: 0, window: '1s', warmup: '10s', coldFactor: 4 })],
];

describe('every factory takes limit 0', () => {
  test.each(switchedOff())('%s: capacity 0, its other options kept', (_name, policy) => {
    expect(policy.limit).toBe(0);
    expect(policy.capacity).toBe(0);
    expect(policy.name).toMatch(/-0-per-/);
  });

  test('the other options are still validated (the switch hides no mistake)', () => {
    expect(configErrorOf(() => tokenBucket({ limit: 0, window: '1s', burst: -1 })).field).toBe(
      'tokenBucket.burst',
    );
    expect(configErrorOf(() => gcra({ limit: 0, window: '1s', burst: 1.5 })).field).toBe(
      'gcra.burst',
    );
    expect(configErrorOf(() => leakyBucket({ limit: 0, window: '1s', delay: -1 })).field).toBe(
      'leakyBucket.delay',
    );
    expect(
      configErrorOf(() => smoothWarmingUp({ limit: 0, window: '1s', warmup: '10s', coldFactor: 0 }))
        .field,
    ).toBe('smoothWarmingUp.coldFactor');
    expect(configErrorOf(() => fixedWindow({ limit: 0, window: 0 })).field).toBe(
      'fixedWindow.window',
    );
  });

  test('a policy with limit 0 never shares state with the same policy switched on', () => {
    expect(gcra({ limit: 0, window: '1s' }).id).not.toBe(gcra({ limit: 1, window: '1s' }).id);
    expect(fixedWindow({ limit: 0, window: '1s' }).id).not.toBe(
      fixedWindow({ limit: 1, window: '1s' }).id,
    );
  });
});

describe.each([
  ['redis', () => redisStore({ client: testRedis(), batch: false })],
  ['redis, batched', () => redisStore({ client: testRedis() })],
] as Array<[string, () => Store]>)('nothing is written (%s)', (_label, makeStore) => {
  test.each(switchedOff())('%s, alone and beside a policy that admits', async (_name, policy) => {
    const alone = new RateLimiter({ store: makeStore(), policies: policy, prefix: 'alone' });
    const mixed = new RateLimiter({
      store: makeStore(),
      policies: [fixedWindow({ limit: 5, window: '1m', name: 'open' }), policy],
      prefix: 'mixed',
    });
    const answers = await Promise.all([
      alone.consume('u'),
      alone.consume('u', { cost: 3 }),
      alone.consume('u', { cost: 0 }),
      alone.refund('u', { cost: 2 }),
      mixed.consume('u'),
      mixed.consume('u', { cost: 0 }),
    ]);
    expect(answers.map((d) => [d.allowed, d.retryAfter])).toEqual([
      [false, -1],
      [false, -1],
      [true, 0],
      [true, 0],
      [false, -1],
      [true, 0],
    ]);
    // All or nothing: the open policy was not charged either.
    expect(answers[4]!.policies[0]).toMatchObject({ allowed: true, remaining: 5 });
    expect(await keysWithTtl(testRedis())).toEqual([]);
  });
});

test.each(switchedOff())('nothing is written (memory store): %s', async (_name, policy) => {
  const store = memoryStore();
  const limiter = new RateLimiter({ store, policies: policy });
  for (const cost of [1, 0, 9]) await limiter.consume('u', { cost });
  // acquire does not wait for what can never come.
  expect(await limiter.acquire('u', { maxWait: '1s' })).toMatchObject({
    allowed: false,
    retryAfter: -1,
  });
  expect(store.size).toBe(0);
});
