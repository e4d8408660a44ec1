/**
 * The `resetAll` scenario every store runs: two limiters share a prefix (different policies)
 * and a third has its own; `resetAll` on the first frees every key of its own, blocks
 * included, and leaves the others' keys as they were.
 */
import { fixedWindow, gcra, RateLimiter, type Store, slidingLog } from '../../src/index';

/** Runs the scenario on `store` (empty, on a fixed clock); answers the limiters for more checks. */
export async function resetAllScenario(store: Store, prefix: string) {
  const own = new RateLimiter({
    store,
    prefix,
    policies: [
      fixedWindow({ limit: 2, window: '1m' }),
      // Layout 0 (a count key per window): a limit above the window in µs.
      fixedWindow({ limit: 5_000, window: '1ms' }),
      slidingLog({ limit: 2, window: '1m' }),
    ],
  });
  const samePrefix = new RateLimiter({ store, prefix, policies: gcra({ limit: 1, window: '1m' }) });
  const otherPrefix = new RateLimiter({
    store,
    prefix: `${prefix}-other`,
    policies: fixedWindow({ limit: 2, window: '1m' }),
  });
  const keys = Array.from({ length: 30 }, (_, i) => `user:${i}`).concat(['odd*[key]?', 'a}b%c']);
  for (const key of keys) {
    await own.consume(key, { cost: 2 });
    await samePrefix.consume(key);
    await otherPrefix.consume(key, { cost: 2 });
  }
  await own.block('blocked', 'forever');
  expect((await own.consume('user:0')).allowed).toBe(false);
  expect((await own.consume('blocked', { cost: 0 })).reason).toBe('blocked');

  const deleted = await own.resetAll();
  expect(deleted).toBeGreaterThanOrEqual(keys.length);

  for (const key of keys) {
    expect(await own.peek(key, { cost: 0 })).toMatchObject({ allowed: true, remaining: 2 });
    expect((await samePrefix.peek(key)).allowed).toBe(false);
    expect((await otherPrefix.peek(key)).allowed).toBe(false);
  }
  expect((await own.consume('blocked')).allowed).toBe(true);
  // Nothing left to delete but what was written since: one key per policy of 'blocked'.
  expect(await own.resetAll()).toBe(3);
  return { own, samePrefix, otherPrefix };
}
