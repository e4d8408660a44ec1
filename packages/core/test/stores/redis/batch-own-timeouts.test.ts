/**
 * Each decision keeps its own timeout inside a batch: two limiters with different timeouts on
 * one store, after a script-cache flush, while Redis stalls past the short timeout. The short
 * limiter's calls time out (and are never run); the long limiter's calls in the same batch are
 * re-sent after NOSCRIPT and decided by Redis, not dropped with their neighbours.
 */
import { fixedWindow, RateLimiter, redisStore } from '@floodgate/core';
import { connectIoredis, flushRedis, useTestRedis } from '../../../../../test/harness/redis';

const redis = useTestRedis();

/** A script that keeps Redis busy for `ms` (every other client waits behind it). */
const STALL = `
local start = redis.call('TIME')
local t0 = start[1] * 1000000 + start[2]
while true do
  local now = redis.call('TIME')
  if now[1] * 1000000 + now[2] - t0 >= tonumber(ARGV[1]) * 1000 then return 1 end
end`;

describe('a batch with decisions of two timeouts', () => {
  it('the short timeout fails only its own decisions; the others are decided', async () => {
    const store = redisStore({ client: redis() });
    const policies = fixedWindow({ limit: 100, window: '1m' });
    const short = new RateLimiter({ store, policies, prefix: 'short', timeout: 100 });
    const long = new RateLimiter({ store, policies, prefix: 'long', timeout: '3s' });
    // Warm up, then lose the scripts: the batch meets NOSCRIPT and is re-sent with EVAL.
    await Promise.all([short.consume('warm'), long.consume('warm')]);
    await flushRedis(redis());
    const staller = connectIoredis();
    try {
      await staller.ping();
      const stalled = staller.eval(STALL, 0, '400');
      const calls = [];
      for (let i = 0; i < 6; i++) {
        calls.push(long.consume('k'), short.consume('k'));
      }
      const decisions = await Promise.all(calls);
      await stalled;
      const longReasons = decisions.filter((_, i) => i % 2 === 0).map((d) => d.reason);
      const shortReasons = decisions.filter((_, i) => i % 2 === 1).map((d) => d.reason);
      expect(longReasons).toEqual(Array(6).fill(undefined));
      expect(shortReasons).toEqual(Array(6).fill('timeout'));
      // Exact counts: the long limiter's 6 charged; the short limiter's timed-out calls never ran.
      expect((await long.peek('k', { cost: 0 })).remaining).toBe(94);
      expect((await short.peek('k', { cost: 0 })).remaining).toBe(100);
    } finally {
      staller.disconnect();
    }
  });
});
