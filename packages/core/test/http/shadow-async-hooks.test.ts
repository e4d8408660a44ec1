/**
 * A shadow middleware wraps the user's hooks to mark decisions `shadow: true`; an `async` hook
 * that rejects must still be caught (reported once as FLOODGATE_HOOK_ERROR), never left as an
 * unhandled rejection, which crashes a process run with Node's default settings.
 */
import {
  type Decision,
  fixedWindow,
  memoryStore,
  RateLimiter,
  type RateLimiterHooks,
} from '@floodgate/core';
import { shadowHooks } from '@floodgate/core/http';
import { observeRejections } from '@floodgate/http-test-kit';

describe('shadow hooks', () => {
  it('an async onDecision that rejects is reported once, not left unhandled', async () => {
    const seen: Decision[] = [];
    const hooks = shadowHooks({
      async onDecision(decision: Decision) {
        seen.push(decision);
        throw new Error('metrics backend down');
      },
    }) as RateLimiterHooks;
    const limiter = new RateLimiter({
      store: memoryStore(),
      policies: fixedWindow({ limit: 1, window: '1m' }),
      hooks,
    });
    const { codes, unhandled } = await observeRejections(async () => {
      await limiter.consume('a');
      await limiter.consume('a');
    });
    expect(seen.map((d) => [d.allowed, d.shadow])).toEqual([
      [true, true],
      [false, true],
    ]);
    expect(unhandled).toEqual([]);
    expect(codes).toEqual(['FLOODGATE_HOOK_ERROR']);
  });

  it('an onDecision that throws is reported once and the decision still returns', async () => {
    const hooks = shadowHooks({
      onDecision() {
        throw new Error('sync failure');
      },
    }) as RateLimiterHooks;
    const limiter = new RateLimiter({
      store: memoryStore(),
      policies: fixedWindow({ limit: 5, window: '1m' }),
      hooks,
    });
    const { codes } = await observeRejections(async () => {
      expect((await limiter.consume('a')).allowed).toBe(true);
      expect((await limiter.consume('a')).remaining).toBe(3);
    });
    expect(codes).toEqual(['FLOODGATE_HOOK_ERROR']);
  });
});
