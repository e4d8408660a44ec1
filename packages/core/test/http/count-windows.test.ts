/**
 * `count` refunds against windows that moved on, over every adapter and both stores: a success
 * held across the end of the window, sub-window (bucket) or log entry it was charged to is not
 * refunded, since the refund would go to a later one that never held it (an attacker holding
 * slow successes would get extra failures). The fixed-window case is in count.test.ts.
 */
import { memoryStore, type Policy, redisStore, slidingLog, slidingWindow } from '@floodgate/core';
import {
  holdRequests,
  NEWEST_FRAMEWORKS,
  useTestApp,
  useTestRedisConnection,
} from '@floodgate/http-test-kit';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';

const redis = useTestRedisConnection();

describe.each(NEWEST_FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  describe.each(['memory', 'redis'])('on the %s store', (storeName) => {
    beforeEach(async () => {
      if (storeName === 'redis') await flushRedis(redis());
    });
    const get = (url: string, status: number) => request(url).get(`/?status=${status}`);

    /**
     * Holds a success charged at `now`, moves the clock by `during` ms and sends a failure
     * (admitted), ends the success, moves the clock by `after` ms, and answers the statuses of
     * two more failures. The policies admit 2.
     */
    async function heldAcross(policies: Policy, during: number, after: number) {
      let now = 1_700_000_155_000; // 5 s before the end of a minute (and of a 10 s bucket)
      const store =
        storeName === 'redis'
          ? redisStore({ client: redis(), clock: () => now })
          : memoryStore({ clock: () => now });
      const hold = holdRequests();
      const url = await start({
        onHold: hold.onHold,
        limiters: [{ store, policies, count: 'failed' }],
      });
      const held = request(url)
        .get('/hold')
        .then((res) => res.status);
      await hold.reached;
      now += during;
      expect((await get(url, 401)).status).toBe(401);
      hold.finish();
      expect(await held).toBe(200);
      now += after;
      return [(await get(url, 401)).status, (await get(url, 401)).status];
    }

    it('slidingWindow: a refund whose bucket has ended is dropped', async () => {
      // Charged in bucket b, failure in b + 1; a refund then would come out of b + 1, and once b
      // slides out the window would hold one failure fewer than it admitted.
      const policy = slidingWindow({ limit: 2, window: '1m', buckets: 6 });
      expect(await heldAcross(policy, 10_000, 50_000)).toEqual([401, 429]);
    });

    it('slidingWindow: a refund within its bucket is made', async () => {
      // The success was given back: the failures alone fill the window.
      const policy = slidingWindow({ limit: 2, window: '1m', buckets: 6 });
      expect(await heldAcross(policy, 1_000, 0)).toEqual([401, 429]);
    });

    it('slidingLog: a refund after its entry left the log is dropped', async () => {
      // A refund takes the newest entries: once the success's own entry has left the log, it
      // would take a failure's.
      const policy = slidingLog({ limit: 2, window: '10s' });
      expect(await heldAcross(policy, 11_000, 0)).toEqual([401, 429]);
    });
  });
});
