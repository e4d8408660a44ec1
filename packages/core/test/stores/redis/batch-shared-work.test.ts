/**
 * What a batch script works out once and shares between its calls, on a real Redis of its own:
 * whether any call's block key exists (one EXISTS for the batch) and each ARGV shape's plan of
 * policies (offsets, checks, commits; the combined layout's policy count). Every case is
 * decided batched and one call at a time, and the two must agree.
 */
import { fixedWindow, gcra, RateLimiter, redisStore, slidingLog } from '../../../src/index';
import { ownRedis, type Sent } from './batch-recording';

const { testRedis, recording } = ownRedis();

const evalshas = (sent: Sent[]) => sent.filter((s) => s.command === 'evalsha');

test('block keys in a batch: one that a decision writes, one that exists, one of another type', async () => {
  const redis = testRedis();
  const { wrapper, sent } = recording();
  const policies = [fixedWindow({ limit: 2, window: '1m', blockDuration: '15m' })];
  const batched = new RateLimiter({
    store: redisStore({ client: wrapper }),
    policies,
    prefix: 'batch9',
  });
  const single = new RateLimiter({
    store: redisStore({ client: redis, batch: false }),
    policies,
    prefix: 'batch9s',
  });
  await batched.consume('warm'); // the script is cached from here on
  const run = (l: RateLimiter, keys: string[]) => Promise.all(keys.map((k) => l.consume(k)));
  const both = async (keys: string[]) => {
    sent.length = 0;
    const decisions = (await run(batched, keys)).map((d) => [d.allowed, d.reason]);
    expect(evalshas(sent).map((s) => s.script)).toEqual(['fixed-window-batch']);
    expect(decisions).toEqual((await run(single, keys)).map((d) => [d.allowed, d.reason]));
    return decisions;
  };
  // No block key exists when the batch starts. The third 'a' is denied and locks 'a' out: the
  // fourth, a later call of the same batch, is blocked as it is one call at a time.
  expect(await both(['a', 'a', 'a', 'a', 'b'])).toEqual([
    [true, undefined],
    [true, undefined],
    [false, 'blocked'],
    [false, 'blocked'],
    [true, undefined],
  ]);
  // A key blocked by hand (its block key exists: the batch reads them all), and a block key
  // that holds a hash: its GET fails that call only, as a single call's does.
  for (const l of [batched, single]) {
    await l.block('held', '1m');
    await redis.hset(l.storageKeys('odd').at(-1)!, 'x', '1');
  }
  expect(await both(['held', 'odd', 'c', 'c'])).toEqual([
    [false, 'blocked'],
    [true, 'store-error'], // onStoreError 'open'
    [true, undefined],
    [true, undefined],
  ]);
});

test('several policies, one key or a key each: calls of one shape in a batch decide as single calls', async () => {
  const redis = testRedis();
  const { wrapper, sent } = recording();
  const sets = {
    combined: [fixedWindow({ limit: 4, window: '1m' }), gcra({ limit: 5, window: '1h' })],
    separate: [fixedWindow({ limit: 4, window: '1m' }), slidingLog({ limit: 5, window: '1h' })],
  };
  for (const [name, policies] of Object.entries(sets)) {
    const batched = new RateLimiter({
      store: redisStore({ client: wrapper }),
      policies,
      prefix: `b10${name}`,
    });
    const single = new RateLimiter({
      store: redisStore({ client: redis, batch: false }),
      policies,
      prefix: `b10${name}s`,
    });
    await batched.consume('warm'); // the script is cached from here on
    // Two shapes (cost 1 on Redis TIME, shared by most calls; cost 2), interleaved.
    const steps: Array<[string, number]> = [
      ...[
        ['a', 1],
        ['a', 1],
        ['b', 2],
        ['a', 1],
        ['b', 1],
        ['a', 2],
        ['a', 1],
      ],
    ] as Array<[string, number]>;
    const run = async (l: RateLimiter) =>
      (await Promise.all(steps.map(([k, cost]) => l.consume(k, { cost })))).map((d) => [
        d.allowed,
        d.remaining,
        d.reason,
      ]);
    sent.length = 0;
    const decisions = await run(batched);
    expect(evalshas(sent)).toHaveLength(1); // one batch (a mixed script is made at run time)
    expect(decisions).toEqual(await run(single));
    expect(decisions.map((d) => d[0])).toEqual([true, true, true, true, true, false, true]);
  }
  // Two limiters of one script, their policies in other orders (a key each; one key, and three
  // policies against two), in one batch: each call is decided by its own policies.
  const pairs = [
    [
      [fixedWindow({ limit: 4, window: '1m' }), slidingLog({ limit: 3, window: '1h' })],
      [slidingLog({ limit: 2, window: '1h' }), fixedWindow({ limit: 9, window: '1m' })],
    ],
    [
      [fixedWindow({ limit: 4, window: '1m' }), gcra({ limit: 3, window: '1h' })],
      [
        gcra({ limit: 2, window: '1h' }),
        fixedWindow({ limit: 9, window: '1m' }),
        sets.combined[0]!,
      ],
    ],
  ];
  for (const [n, pair] of pairs.entries()) {
    const limiters = (client: typeof redis, batch: boolean, prefix: string) => {
      const store = redisStore({ client, batch });
      return pair.map(
        (policies, i) => new RateLimiter({ store, policies, prefix: `${prefix}${i}` }),
      );
    };
    const [x, y] = limiters(wrapper as unknown as typeof redis, true, `b11${n}`);
    const [xs, ys] = limiters(redis, false, `b11${n}s`);
    await x!.consume('warm');
    const order = (l1: RateLimiter, l2: RateLimiter) =>
      [l1, l2, l1, l2, l2, l1, l1].map((l) => l.consume('k'));
    sent.length = 0;
    const both = (await Promise.all(order(x!, y!))).map((d) => [d.allowed, d.remaining]);
    expect(evalshas(sent)).toHaveLength(1);
    const one = (await Promise.all(order(xs!, ys!))).map((d) => [d.allowed, d.remaining]);
    expect(both).toEqual(one);
  }
});
