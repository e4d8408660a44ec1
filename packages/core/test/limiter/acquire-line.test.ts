/**
 * `acquire` waiters on one key in one process stand in line: served first come, first served
 * (a large cost is not overtaken by smaller ones that fit sooner), at most `maxQueueSize` of
 * them (the next is refused at once with reason 'queue-full'), and a waiter whose `maxWait`
 * passes while others are ahead gives up on time. Fake timers and a clock that follows them.
 */

import { configErrorOf } from '@floodgate/http-test-kit';
import { type Decision, fixedWindow, memoryStore, RateLimiter, tokenBucket } from '../../src/index';
import { T0 } from '../conformance/table';

beforeEach(() => {
  jest.useFakeTimers({ now: T0 });
});
afterEach(() => {
  jest.useRealTimers();
});

const store = () => memoryStore({ clock: () => Date.now() });

/** Starts `acquire` and records when (ms after T0) and with what it settled. */
function track(limiter: RateLimiter, key: string, options?: { cost?: number; maxWait?: number }) {
  const result: { at?: number; decision?: Decision } = {};
  const done = limiter.acquire(key, options).then((decision) => {
    result.at = Date.now() - T0;
    result.decision = decision;
  });
  return { result, done };
}

describe('acquire: one line per key', () => {
  test('first come, first served: a smaller cost that fits sooner does not overtake', async () => {
    // One token per 50 ms, two at most.
    const limiter = new RateLimiter({
      store: store(),
      policies: tokenBucket({ limit: 2, window: 100 }),
    });
    expect((await limiter.consume('k', { cost: 2 })).allowed).toBe(true);
    const big = track(limiter, 'k', { cost: 2 });
    await jest.advanceTimersByTimeAsync(1);
    const small = track(limiter, 'k', { cost: 1 });
    await jest.advanceTimersByTimeAsync(200);
    await Promise.all([big.done, small.done]);
    expect(big.result).toMatchObject({ at: 100, decision: { allowed: true } });
    expect(small.result).toMatchObject({ at: 150, decision: { allowed: true } });
  });

  test('waiters are admitted in the order they came', async () => {
    const limiter = new RateLimiter({
      store: store(),
      policies: fixedWindow({ limit: 1, window: 50 }),
    });
    const order: number[] = [];
    const calls = [0, 1, 2, 3].map((i) => limiter.acquire('k').then(() => order.push(i)));
    await jest.advanceTimersByTimeAsync(200);
    await Promise.all(calls);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  test('maxQueueSize: the next waiter on a full line is refused at once; other keys are not', async () => {
    const limiter = new RateLimiter({
      store: store(),
      policies: fixedWindow({ limit: 1, window: 100 }),
      maxQueueSize: 2,
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    const first = track(limiter, 'k');
    const second = track(limiter, 'k');
    const third = track(limiter, 'k');
    await jest.advanceTimersByTimeAsync(0);
    expect(third.result).toMatchObject({
      at: 0,
      decision: { allowed: false, reason: 'queue-full', remaining: 0, retryAfter: 100 },
    });
    expect(first.result.decision).toBeUndefined();
    // Another key has its own line.
    expect(await limiter.acquire('other')).toMatchObject({ allowed: true });
    await jest.advanceTimersByTimeAsync(200);
    expect(first.result).toMatchObject({ at: 100, decision: { allowed: true } });
    expect(second.result).toMatchObject({ at: 200, decision: { allowed: true } });
    // The line emptied: a newcomer waits again instead of being refused.
    const later = track(limiter, 'k');
    await jest.advanceTimersByTimeAsync(100);
    expect(later.result).toMatchObject({ at: 300, decision: { allowed: true } });
  });

  test('a waiter whose maxWait passes behind another gives up on time, denied', async () => {
    const limiter = new RateLimiter({
      store: store(),
      policies: fixedWindow({ limit: 1, window: 100 }),
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    const ahead = track(limiter, 'k');
    const behind = track(limiter, 'k', { maxWait: 30 });
    await jest.advanceTimersByTimeAsync(30);
    expect(behind.result).toMatchObject({ at: 30, decision: { allowed: false, retryAfter: 100 } });
    await jest.advanceTimersByTimeAsync(70);
    expect(ahead.result).toMatchObject({ at: 100, decision: { allowed: true } });
  });

  test('maxQueueSize must be a positive integer', () => {
    for (const maxQueueSize of [0, 1.5, -1, '2']) {
      const error = configErrorOf(
        () =>
          new RateLimiter({
            store: memoryStore(),
            policies: fixedWindow({ limit: 1, window: 100 }),
            maxQueueSize: maxQueueSize as number,
          }),
      );
      expect(error.field).toBe('RateLimiter.maxQueueSize');
    }
  });
});
