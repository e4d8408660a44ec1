/**
 * A route with both a concurrency limit and rate policies on one Redis store, while Redis
 * stalls: the slot's call times out, and the rate policies are then answered by their failure
 * policy at once instead of asking the same stalled store and waiting a second timeout.
 */
import { fixedWindow, type RateLimiterHooks, redisStore } from '@floodgate/core';
import { NEWEST_FRAMEWORKS, useTestApp } from '@floodgate/http-test-kit';
import request from 'supertest';
import { connectIoredis, flushRedis, useTestRedis } from '../../../../test/harness/redis';

const redis = useTestRedis();

/** A script that keeps Redis busy for `ms` (every other client waits behind it). */
const STALL = `
local start = redis.call('TIME')
local t0 = start[1] * 1000000 + start[2]
while true do
  local now = redis.call('TIME')
  if now[1] * 1000000 + now[2] - t0 >= tonumber(ARGV[1]) * 1000 then return 1 end
end`;

describe.each(NEWEST_FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);
  beforeEach(() => flushRedis(redis()));

  it('one timeout, not two: the rate policies do not ask the store that just timed out', async () => {
    const rateCalls: string[] = [];
    const hooks: RateLimiterHooks = {
      onStoreCall: (event) => rateCalls.push(event.outcome),
      onDecision: (decision) => rateCalls.push(`decision:${decision.reason ?? 'store'}`),
    };
    const url = await start({
      limiters: [
        {
          store: redisStore({ client: redis() }),
          policies: fixedWindow({ limit: 10, window: '1m' }),
          concurrency: { limit: 5 },
          timeout: 150,
          circuitBreaker: false,
          hooks,
        },
      ],
    });
    // Healthy: both are decided by the store.
    expect((await request(url).get('/')).status).toBe(200);
    expect(rateCalls).toEqual(['ok', 'decision:store']);
    rateCalls.length = 0;
    const staller = connectIoredis();
    try {
      await staller.ping();
      const stalled = staller.eval(STALL, 0, '700');
      const response = await request(url).get('/');
      await stalled;
      // 'open' admits; the rate decision is the failure policy's, made without a store call.
      expect(response.status).toBe(200);
      expect(rateCalls).toEqual(['decision:timeout']);
    } finally {
      staller.disconnect();
    }
  });
});
