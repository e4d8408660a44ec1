/**
 * FLOODGATE_SHARED_BUDGET sees the Redis client behind the store: two middlewares that each
 * build their own `redisStore({ client })` on one client, with the same prefix and policies,
 * spend one budget and are reported; stores on different clients are not.
 */
import { fixedWindow, redisStore } from '@floodgate/core';
import { parseHttpRateLimitOptions } from '@floodgate/core/http';
import { useTestRedisConnection } from '../../../../test/harness/redis';

const redis = useTestRedisConnection();

/** FLOODGATE_ warning codes given while `run` ran. */
function warningsDuring(run: () => void): string[] {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    run();
    return spy.mock.calls
      .map((call) => (call[1] as { code?: string } | undefined)?.code ?? '')
      .filter((code) => code.startsWith('FLOODGATE_'));
  } finally {
    spy.mockRestore();
  }
}

const policies = () => fixedWindow({ limit: 5, window: '1m' });

describe('shared rate budgets behind different store objects', () => {
  it('FLOODGATE_SHARED_BUDGET: each middleware builds its own redisStore on one client', () => {
    const codes = warningsDuring(() => {
      for (let i = 0; i < 3; i++) {
        const store = redisStore({ client: redis() });
        parseHttpRateLimitOptions({ store, prefix: 'same', policies: policies() }, 'rateLimit');
      }
    });
    expect(codes).toEqual(['FLOODGATE_SHARED_BUDGET']);
  });

  it('no warning for the same numbers on two clients', () => {
    const other = redis().duplicate();
    try {
      const codes = warningsDuring(() => {
        for (const client of [redis(), other]) {
          const store = redisStore({ client });
          parseHttpRateLimitOptions({ store, prefix: 'apart', policies: policies() }, 'rateLimit');
        }
      });
      expect(codes).toEqual([]);
    } finally {
      other.disconnect();
    }
  });
});
