/**
 * redisStore's batching keeps up to three round trips in flight per Redis node (MAX_IN_FLIGHT),
 * so Node writes the next batch while Redis decides the last. Redis is held with CLIENT PAUSE so
 * that what is in flight, and what waits, does not depend on the machine's speed.
 */
import { fixedWindow, RateLimiter, redisStore } from '../../../src/index';
import {
  Channel,
  MAX_IN_FLIGHT,
  SECOND_AT,
  SEND_NOW_AT,
  SPLIT_AT,
} from '../../../src/stores/redis-batch-channel';
import { clockProbeScript } from '../../../src/stores/scripts';
import { nextTurn, ownRedis } from './batch-recording';

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

/**
 * A limiter on a recording client whose scripts are cached, with nothing recorded yet and Redis
 * paused for 300 ms: what it sends now stays in flight until the pause ends.
 */
const heldLimiter = async (prefix: string) => {
  const { wrapper, sent } = recording();
  const limiter = limiterOn(wrapper, prefix);
  await warm(limiter);
  sent.length = 0;
  await pause(300);
  return { limiter, sent };
};

test('the rule: three in flight at most, another from 4 calls, 8 at once, halves from 8', () => {
  expect([MAX_IN_FLIGHT, SECOND_AT, SEND_NOW_AT, SPLIT_AT]).toEqual([3, 4, 8, 8]);
});

test('8 calls of one tick on an idle node go at once; the rest of the tick goes at its end', async () => {
  const { limiter, sent } = await heldLimiter('pipe0');
  const calls = Array.from({ length: 7 }, (_, i) => limiter.consume(`a${i}`));
  // Seven wait for the end of the tick; the eighth sends all eight before it ends.
  expect(sent).toEqual([]);
  calls.push(limiter.consume('a7'));
  expect(sent.map((s) => [s.script, s.keys, s.inFlight])).toEqual([['fixed-window-batch', 16, 0]]);
  // Two more in the same tick: fewer than SECOND_AT, yet they go at the end of this tick.
  calls.push(limiter.consume('a8'), limiter.consume('a9'));
  await nextTurn();
  expect(sent.map((s) => [s.script, s.keys, s.inFlight])).toEqual([
    ['fixed-window-batch', 16, 0],
    ['fixed-window-batch', 4, 1],
  ]);
  // A later tick's stragglers wait for SECOND_AT again (here: one, so for a reply).
  calls.push(limiter.consume('b0'));
  await nextTurn();
  expect(sent).toHaveLength(2);
  const decisions = await Promise.all(calls);
  expect(decisions.every((d) => d.allowed && d.remaining === 999)).toBe(true);
  expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual([
    'evalsha:16',
    'evalsha:4',
    'evalsha:2',
  ]);
});

test('calls made while three round trips are in flight wait for a reply, then go together', async () => {
  const { limiter, sent } = await heldLimiter('pipe1');
  const first = Array.from({ length: 10 }, (_, i) => limiter.consume(`a${i}`));
  await nextTurn();
  const second = Array.from({ length: 3 }, (_, i) => limiter.consume(`b${i}`));
  await nextTurn();
  // Three wait (fewer than SECOND_AT); the fourth sends the four as a third round trip.
  expect(sent).toHaveLength(2);
  second.push(limiter.consume('b3'));
  await nextTurn();
  const third = Array.from({ length: 5 }, (_, i) => limiter.consume(`c${i}`));
  await nextTurn();
  // Redis holds the first ten (8 sent at once, 2 at the end of their tick) and the four; the
  // five made since are not written.
  expect(sent.map((s) => [s.script, s.keys, s.inFlight])).toEqual([
    ['fixed-window-batch', 16, 0],
    ['fixed-window-batch', 4, 1],
    ['fixed-window-batch', 8, 2],
  ]);
  const decisions = await Promise.all([...first, ...second, ...third]);
  expect(decisions.every((d) => d.allowed && d.remaining === 999)).toBe(true);
  // A reply freed a round trip: the five went as one batch (fewer than SPLIT_AT), and no fourth
  // round trip was ever in flight.
  expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual([
    ...['evalsha:16', 'evalsha:4', 'evalsha:8', 'evalsha:10'],
  ]);
  expect(Math.max(...sent.map((s) => s.inFlight))).toBeLessThan(MAX_IN_FLIGHT);
});

test('beside one batch in flight, a second goes once SECOND_AT (4) calls wait', async () => {
  const { limiter, sent } = await heldLimiter('pipe2');
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
  // The fourth made it a batch of four beside the first; then `d` waits (one, below SECOND_AT).
  // Never the single-call script beside its batch variant (one may be cached, the other not).
  expect(sent.map((s) => [s.script, s.keys, s.inFlight])).toEqual([
    ['fixed-window-batch', 8, 0],
    ['fixed-window-batch', 8, 1],
  ]);
  await Promise.all([...four, ...three, fourth, waiting]);
  expect(sent.map((s) => s.keys)).toEqual([8, 8, 2]);
});

test('a single call in flight holds every later call until its reply', async () => {
  const { limiter, sent } = await heldLimiter('pipe3');
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

test('an idle queue splits again only after splits that overlapped; else 1, 3, 7 flushes later', () => {
  // An idle flush of 8 or more (calls that queued while round trips were in flight, whose
  // replies then came back together) goes in halves; 8 made in one tick went at once instead.
  const channel = new Channel<number>();
  const idleFlushes = (count: number): number[] =>
    Array.from({ length: count }, () => channel.pieceSize(10, 128));
  const [split, whole] = [5, 128];
  const wholes = (n: number) => new Array<number>(n).fill(whole);
  expect(idleFlushes(15)).toEqual([split, whole, split, ...wholes(3), split, ...wholes(7), split]);
  // A flush that finds a round trip in flight (the halves overlapped) resets the wait.
  channel.inFlight = 1;
  expect(channel.pieceSize(10, 128)).toBe(128);
  channel.inFlight = 0;
  expect(idleFlushes(3)).toEqual([split, whole, split]);
  // Below SPLIT_AT an idle queue goes whole.
  expect(new Channel<number>().pieceSize(SPLIT_AT - 1, 128)).toBe(128);
});

test('calls queued behind three round trips whose replies come back together go in halves', async () => {
  const { limiter, sent } = await heldLimiter('pipe7');
  const first: ReturnType<typeof limiter.consume>[] = [];
  for (const group of ['a', 'b', 'c']) {
    first.push(...Array.from({ length: 4 }, (_, i) => limiter.consume(`${group}${i}`)));
    await nextTurn();
  }
  // Three in flight: these ten wait; Redis answers the three round trips when the pause ends.
  const waiting = Array.from({ length: 10 }, (_, i) => limiter.consume(`d${i}`));
  await Promise.all([...first, ...waiting]);
  const pieces = sent.map((s) => s.keys / 2);
  expect(pieces.slice(0, 3)).toEqual([4, 4, 4]);
  // One reply at a time: 10 beside the others; all at once: halves of an idle queue.
  expect([[10], [5, 5]]).toContainEqual(pieces.slice(3));
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
  // Eight at once, the rest of their tick, then the six that waited.
  expect(sent.filter((s) => s.command === 'evalsha').map((s) => s.keys)).toEqual([16, 8, 12]);
});

test('NOSCRIPT with three batches in flight: all re-sent with EVAL in order', async () => {
  const redis = testRedis();
  const { wrapper, sent } = recording();
  for (let round = 0; round < 2; round++) {
    // A store of its own each round.
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
    // All three were written before the first NOSCRIPT came back, so all three met it.
    expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual([
      ...['evalsha:16', 'evalsha:8', 'evalsha:10', 'eval:16', 'eval:8', 'eval:10'],
    ]);
  }
});

// Redis answers in order, so the second batch's NOSCRIPT always arrives before the first one's
// re-sent EVAL is answered; but it may arrive in a later read, after a tick in which new calls
// could go. Sent then, they would run after the first EVAL cached the script and before the
// second batch's re-send: decided before calls made earlier. Here the second error is held
// until 50 ms after the first re-send (and that EVAL's answer after it), with calls made
// meanwhile: they wait for both re-sends.
test('NOSCRIPT: nothing new is sent while a re-sent batch is unanswered', async () => {
  const redis = testRedis();
  const { wrapper, sent } = recording();
  const limiter = limiterOn(wrapper, 'pipe6', 100);
  await redis.script('FLUSH');
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const later: ReturnType<typeof limiter.consume>[] = [];
  const send = wrapper.sendCommand.bind(wrapper);
  let evalshas = 0;
  let evals = 0;
  wrapper.sendCommand = (command, stream) => {
    const name = command.name.toLowerCase();
    const held = command as unknown as { reject(e: unknown): void; resolve(v: unknown): void };
    if (name === 'evalsha' && ++evalshas === 2) {
      const reject = held.reject.bind(held);
      held.reject = (error) => void released.then(() => reject(error));
    }
    // The store's read of Redis TIME (stores/redis-time.ts) is an EVAL too: not counted.
    const clockRead = command.args[0] === clockProbeScript().source;
    if (name === 'eval' && !clockRead && ++evals === 1) {
      const resolve = held.resolve.bind(held);
      held.resolve = (value) => void released.then(() => resolve(value));
      for (let i = 0; i < 4; i++) later.push(limiter.consume('k'));
      setTimeout(release, 50);
    }
    return send(command, stream);
  };
  await pause(100);
  const calls = Array.from({ length: 12 }, () => limiter.consume('k'));
  const decisions = await Promise.all([...calls, ...(await released.then(() => later))]);
  expect(decisions.map((d) => d.remaining)).toEqual(Array.from({ length: 16 }, (_, i) => 99 - i));
  expect(sent.map((s) => `${s.command}:${s.keys}`)).toEqual([
    ...['evalsha:16', 'evalsha:8', 'eval:16', 'eval:8', 'evalsha:8'],
  ]);
});
