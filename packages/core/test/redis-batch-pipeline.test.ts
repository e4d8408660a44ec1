/**
 * redisStore's batching keeps up to two round trips in flight per Redis node (MAX_IN_FLIGHT),
 * so Node writes the next batch while Redis decides the last. Redis is held with CLIENT PAUSE so
 * that what is in flight, and what waits, does not depend on the machine's speed.
 */
import { fixedWindow, RateLimiter, redisStore } from '../src/index';
import { MAX_IN_FLIGHT, SECOND_AT, SPLIT_AT } from '../src/stores/redis-batch-channel';
import { nextTurn, ownRedis } from './redis-batch-recording';

const { recording, pause, testRedis } = ownRedis();

const limiterOn = (client: ReturnType<typeof recording>['wrapper'], prefix: string, limit = 1000) =>
  new RateLimiter({
    store: redisStore({ client }),
    policies: [fixedWindow({ limit, window: '1m' })],
    prefix,
  });

/** Caches the single-call script and its batch variant. */
const warm = async (limiter: RateLimiter): Promise<void> => {
  await limiter.consume('warm');
  await Promise.all([limiter.consume('warm'), limiter.consume('warm')]);
};

test('the rule: two round trips in flight at most, the second from 4 calls, halves from 8', () => {
  expect([MAX_IN_FLIGHT, SECOND_AT, SPLIT_AT]).toEqual([2, 4, 8]);
});

test('calls made while two round trips are in flight wait for a reply, then go together', async () => {
  const { wrapper, sent } = recording();
  const limiter = limiterOn(wrapper, 'pipe1');
  await warm(limiter);
  sent.length = 0;
  await pause(300);
  const first = Array.from({ length: 10 }, (_, i) => limiter.consume(`a${i}`));
  await nextTurn();
  const second = Array.from({ length: 3 }, (_, i) => limiter.consume(`b${i}`));
  await nextTurn();
  const third = limiter.consume('c');
  await nextTurn();
  // Redis holds both halves of the first ten; the four made since are not written.
  expect(sent.map((s) => [s.script, s.keys, s.inFlight])).toEqual([
    ['fixed-window-batch', 10, 0],
    ['fixed-window-batch', 10, 1],
  ]);
  const decisions = await Promise.all([...first, ...second, third]);
  expect(decisions.every((d) => d.allowed && d.remaining === 999)).toBe(true);
  // A reply freed a round trip: the four went as one batch (fewer than SPLIT_AT), and no third
  // round trip was ever in flight.
  expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual([
    ...['evalsha:10', 'evalsha:10', 'evalsha:8'],
  ]);
  expect(Math.max(...sent.map((s) => s.inFlight))).toBeLessThan(MAX_IN_FLIGHT);
});

test('beside one batch in flight, a second goes once SECOND_AT (4) calls wait', async () => {
  const { wrapper, sent } = recording();
  const limiter = limiterOn(wrapper, 'pipe2');
  await warm(limiter);
  sent.length = 0;
  await pause(300);
  const four = Array.from({ length: 4 }, (_, i) => limiter.consume(`a${i}`));
  await nextTurn();
  const three = Array.from({ length: 3 }, (_, i) => limiter.consume(`b${i}`));
  await nextTurn();
  // Three wait (a round trip of their own would cost Redis an EVALSHA and a TIME for three).
  expect(sent.map((s) => [s.script, s.keys, s.inFlight])).toEqual([['fixed-window-batch', 8, 0]]);
  const fourth = limiter.consume('c');
  await nextTurn();
  const waiting = limiter.consume('d');
  await nextTurn();
  // The fourth made it a batch of four beside the first; then two are in flight and `d` waits.
  // Never the single-call script beside its batch variant (one may be cached, the other not).
  expect(sent.map((s) => [s.script, s.keys, s.inFlight])).toEqual([
    ['fixed-window-batch', 8, 0],
    ['fixed-window-batch', 8, 1],
  ]);
  await Promise.all([...four, ...three, fourth, waiting]);
  expect(sent.map((s) => s.keys)).toEqual([8, 8, 2]);
});

test('a single call in flight holds every later call until its reply', async () => {
  const { wrapper, sent } = recording();
  const limiter = limiterOn(wrapper, 'pipe3');
  await warm(limiter);
  sent.length = 0;
  await pause(300);
  const lone = limiter.consume('a');
  await nextTurn();
  const later = Array.from({ length: 3 }, (_, i) => limiter.consume(`b${i}`));
  await nextTurn();
  expect(sent.map((s) => [s.script, s.keys])).toEqual([['fixed-window', 2]]);
  await Promise.all([lone, ...later]);
  expect(sent.map((s) => [s.script, s.keys, s.inFlight])).toEqual([
    ['fixed-window', 2, 0],
    ['fixed-window-batch', 6, 0],
  ]);
});

test('an idle queue splits again only after splits that overlapped; else 1, 3, 7 flushes later', async () => {
  const { wrapper, sent } = recording();
  const limiter = limiterOn(wrapper, 'pipe6');
  await warm(limiter);
  const waves = async (count: number): Promise<number[][]> => {
    const pieces: number[][] = [];
    for (let w = 0; w < count; w++) {
      sent.length = 0;
      // Every wave starts on an idle channel: the last one was answered in full.
      await Promise.all(Array.from({ length: 10 }, (_, i) => limiter.consume(`w${i}`)));
      pieces.push(sent.map((s) => s.keys / 2));
    }
    return pieces;
  };
  const [split, whole] = [[5, 5], [10]];
  const wholes = (n: number) => new Array(n).fill(whole);
  expect(await waves(15)).toEqual([
    ...[split, whole, split, ...wholes(3), split, ...wholes(7), split],
  ]);
  // A flush that finds a round trip in flight (the halves overlapped) resets the wait.
  sent.length = 0;
  await pause(300);
  const four = Array.from({ length: 4 }, (_, i) => limiter.consume(`a${i}`));
  await nextTurn();
  await Promise.all([...four, ...Array.from({ length: 4 }, (_, i) => limiter.consume(`b${i}`))]);
  expect(sent.map((s) => [s.keys / 2, s.inFlight])).toEqual([
    [4, 0],
    [4, 1],
  ]);
  expect(await waves(3)).toEqual([split, whole, split]);
});

test("one key's calls are decided in call order across the batches in flight", async () => {
  const { wrapper, sent } = recording();
  const limiter = limiterOn(wrapper, 'pipe4', 15);
  await pause(100);
  const calls = Array.from({ length: 12 }, () => limiter.consume('k'));
  await nextTurn();
  for (let i = 0; i < 6; i++) calls.push(limiter.consume('k'));
  const decisions = await Promise.all(calls);
  expect(decisions.map((d) => (d.allowed ? d.remaining : 'denied'))).toEqual([
    ...Array.from({ length: 15 }, (_, i) => 14 - i),
    ...new Array(3).fill('denied'),
  ]);
  // Two halves of six, then the six that waited.
  expect(sent.filter((s) => s.command === 'evalsha').map((s) => s.keys)).toEqual([12, 12, 12]);
});

test('NOSCRIPT with two batches in flight: both re-sent with EVAL in order, then the rest', async () => {
  const redis = testRedis();
  const { wrapper, sent } = recording();
  for (let round = 0; round < 2; round++) {
    // A store of its own each round, so that its first queue splits (see the test above).
    const limiter = limiterOn(wrapper, 'pipe5', 100);
    sent.length = 0;
    await redis.script('FLUSH');
    await pause(100);
    const calls = Array.from({ length: 12 }, () => limiter.consume('k'));
    await nextTurn();
    for (let i = 0; i < 5; i++) calls.push(limiter.consume('k'));
    const decisions = await Promise.all(calls);
    // Every call charged once, in call order.
    expect(decisions.map((d) => d.remaining)).toEqual(
      Array.from({ length: 17 }, (_, i) => 100 - round * 17 - i - 1),
    );
    // The five that waited went after both re-sends, when the script was cached again.
    expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual([
      ...['evalsha:12', 'evalsha:12', 'eval:12', 'eval:12', 'evalsha:10'],
    ]);
  }
});
