/**
 * Bypasses, leaks and crashes in the adapters found by adversarial testing, and CDN client IPs,
 * run through real servers on every framework major (Express 4 and 5,
 * Koa 2 and 3) and every store (memory, Redis on the harness server).
 */

import http from 'node:http';
import {
  type ConcurrencyDecision,
  ConcurrencyLimiter,
  fixedWindow,
  memoryStore,
  type Store,
} from '@floodgate/core';
import {
  FRAMEWORKS,
  holdRequests,
  storesOn,
  type TestAppOptions,
  useTestApp,
  useTestRedisConnection,
  warningsDuring,
  withoutFastify,
} from '@floodgate/http-test-kit';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';

type Req = { get(name: string): string | undefined };

const frameworks = withoutFastify(FRAMEWORKS);
const redis = useTestRedisConnection();

// A clock that stands still: no window ends during a test.
const clock = () => 1_700_000_010_000;
const stores = storesOn(clock, redis);

/** Polls `probe` (bounded: about 2 s) until it answers `expected`; returns the last answer. */
async function eventually<T>(probe: () => Promise<T>, expected: T): Promise<T> {
  let last = await probe();
  for (let i = 0; i < 100 && last !== expected; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    last = await probe();
  }
  return last;
}

const randomKey = () => `k-${Math.random().toString(36).slice(2)}${Date.now()}`;

describe.each(frameworks)('%s', (_framework, serve) => {
  const { start, close } = useTestApp(serve);

  describe.each(stores)('on the %s store', (storeName, makeStore) => {
    let store: Store;
    beforeEach(async () => {
      if (storeName === 'redis') await flushRedis(redis());
      store = makeStore();
    });
    const policies = fixedWindow({ limit: 5, window: '1m', name: 'per-minute' });

    describe('appKey verification', () => {
      const known = new Set(['issued-1', 'issued-2']);
      const verifyAppKey = async (appKey: string) => known.has(appKey);

      it('40 fresh random app keys from one IP against a limit of 5: only 5 admitted', async () => {
        const url = await start({
          limiters: [{ store, policies, key: ['clientId', 'appKey', 'ip'], verifyAppKey }],
        });
        const statuses: number[] = [];
        for (let i = 0; i < 40; i++) {
          statuses.push((await request(url).get('/').set('x-app-key', randomKey())).status);
        }
        expect(statuses.filter((s) => s === 200)).toHaveLength(5);
        // An issued key has its own budget, whatever the IP spent.
        const issued = await request(url).get('/').set('x-app-key', 'issued-1');
        expect(issued.status).toBe(200);
        expect(issued.body.rateLimit.remaining).toBe(4);
      });

      it('without verifyAppKey, an app key never outranks a later ip (and a warning says so)', async () => {
        let statuses: number[] = [];
        const warnings = await warningsDuring(async () => {
          const url = await start({ limiters: [{ store, policies, key: ['appKey', 'ip'] }] });
          statuses = [];
          for (let i = 0; i < 40; i++) {
            statuses.push((await request(url).get('/').set('x-app-key', randomKey())).status);
          }
        });
        expect(statuses.filter((s) => s === 200)).toHaveLength(5);
        // The apps of earlier tests on this file's Redis client spend the same budget
        // (FLOODGATE_SHARED_BUDGET, rightly): only the app-key warning is under test.
        expect(warnings.filter((code) => code !== 'FLOODGATE_SHARED_BUDGET')).toEqual([
          'FLOODGATE_UNVERIFIED_APP_KEY',
        ]);
      });

      it("unknownAppKey: 'refuse' answers an unknown key with a 403 problem and charges nothing", async () => {
        const url = await start({
          limiters: [
            { store, policies, key: ['appKey', 'ip'], verifyAppKey, unknownAppKey: 'refuse' },
          ],
        });
        for (let i = 0; i < 3; i++) {
          const refused = await request(url).get('/').set('x-app-key', randomKey());
          expect(refused.status).toBe(403);
          expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
          expect(JSON.parse(refused.text)).toMatchObject({ status: 403, title: 'Forbidden' });
        }
        expect((await request(url).get('/?appKey=issued-2')).body.rateLimit.remaining).toBe(4);
        // No app key at all: the next source (ip) decides, with its whole budget.
        expect((await request(url).get('/')).body.rateLimit.remaining).toBe(4);
      });
    });

    it('proxy hop counts: a forged X-Forwarded-For entry left of the real one is ignored', async () => {
      const url = await start({ trustProxy: 1, limiters: [{ store, policies }] });
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) {
        const forged = `198.51.100.${i + 1}`;
        const res = await request(url).get('/').set('X-Forwarded-For', `${forged}, 203.0.113.9`);
        statuses.push(res.status);
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(5);
      // The real client is 203.0.113.9: another real client has its own budget.
      expect((await request(url).get('/').set('X-Forwarded-For', '203.0.113.10')).status).toBe(200);
    });

    it('CDN ipHeader: believed from the trusted range only', async () => {
      const limiter = {
        store,
        policies: fixedWindow({ limit: 1, window: '1m' }),
        // The test client connects from 127.0.0.1; the "CDN edge" is the loopback range.
        ipHeader: { name: 'cf-connecting-ip', trustedFrom: ['127.0.0.0/8', '::1/128'] },
      };
      const url = await start({ limiters: [limiter] });
      const from = (ip: string) => request(url).get('/').set('CF-Connecting-IP', ip);
      expect((await from('198.51.100.1')).status).toBe(200);
      expect((await from('198.51.100.2')).status).toBe(200);
      expect((await from('198.51.100.1')).status).toBe(429);
      expect((await from('2001:db8::1')).body.rateLimit.allowed).toBe(true);
      await close();

      // Not from a trusted range: the header is ignored, the connection's address is the key.
      const untrusted = await start({
        limiters: [
          {
            ...limiter,
            prefix: 'untrusted',
            ipHeader: [{ name: 'cf-connecting-ip', trustedFrom: ['173.245.48.0/20'] }],
          },
        ],
      });
      const fromUntrusted = (ip: string) => request(untrusted).get('/').set('CF-Connecting-IP', ip);
      expect((await fromUntrusted('198.51.100.1')).status).toBe(200);
      expect((await fromUntrusted('198.51.100.2')).status).toBe(429);
    });

    describe('aborted requests never leak a lease', () => {
      it('a client that gives up while its key is being resolved frees its slot at once', async () => {
        let entered!: () => void;
        const inKey = new Promise<void>((resolve) => {
          entered = resolve;
        });
        let proceed!: () => void;
        const resume = new Promise<void>((resolve) => {
          proceed = resolve;
        });
        const url = await start({
          limiters: [
            {
              store,
              concurrency: { limit: 1, leaseTtl: '10m' },
              key: async (req: Req) => {
                if (req.get('x-slow') !== undefined) {
                  entered();
                  await resume;
                }
                return 'one-client';
              },
            },
          ],
        });
        const aborted = http.get(`${url}/`, { headers: { 'x-slow': '1' } });
        aborted.on('error', () => undefined);
        await inKey;
        aborted.destroy();
        // Let the server see the close before the key resolves and the lease is taken.
        await new Promise((resolve) => setTimeout(resolve, 100));
        proceed();
        expect(await eventually(async () => (await request(url).get('/')).status, 200)).toBe(200);
      });

      it('a sequential client never races its own lease: every answer is 200', async () => {
        // A release that takes a while (a slow store): the next request must still find the slot free.
        class SlowRelease extends ConcurrencyLimiter {
          override async acquire(key: string): Promise<ConcurrencyDecision> {
            const decision = await super.acquire(key);
            const lease = decision.lease;
            if (lease === undefined) return decision;
            const release = async () => {
              await new Promise((resolve) => setTimeout(resolve, 30));
              return lease.release();
            };
            return { ...decision, lease: { ...lease, id: lease.id, release } };
          }
        }
        const concurrency = new SlowRelease({ store, limit: 1, leaseTtl: '10m' });
        const url = await start({ limiters: [{ concurrency }] });
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        try {
          const statuses: number[] = [];
          for (let i = 0; i < 8; i++) {
            statuses.push((await request(url).get('/').agent(agent)).status);
          }
          expect(statuses).toEqual(Array(8).fill(200));
        } finally {
          agent.destroy();
        }
      });
    });

    describe('a concurrency refusal is not charged to the rate policies', () => {
      const holdOne = async (limiters: TestAppOptions['limiters']) => {
        const hold = holdRequests();
        const url = await start({
          onHold: hold.onHold,
          limiters,
        });
        const held = request(url)
          .get('/hold')
          .then((res) => res);
        await hold.reached;
        const release = async () => {
          hold.finish();
          return held;
        };
        return { url, release };
      };

      it('refused for concurrency first: the rate budget is untouched', async () => {
        const rate = fixedWindow({ limit: 2, window: '1m', name: 'rate' });
        const { url, release } = await holdOne([
          { store, policies: rate, concurrency: { limit: 1 } },
        ]);
        for (let i = 0; i < 5; i++) {
          const busy = await request(url).get('/');
          expect(busy.status).toBe(429);
          expect(JSON.parse(busy.text)['violated-policies']).toEqual(['concurrency-1']);
          // The rate headers still say what is left, read without charging.
          expect(busy.headers.ratelimit).toMatch(/^"rate";r=1;t=\d+, "concurrency-1";r=0/);
        }
        expect((await release()).status).toBe(200);
        const next = await eventually(async () => (await request(url).get('/')).status, 200);
        expect(next).toBe(200);
        const over = await request(url).get('/');
        expect(over.status).toBe(429);
        expect(JSON.parse(over.text)['violated-policies']).toEqual(['rate']);
      });

      it('refused by a rate policy: the slot taken for it is given back at once', async () => {
        const concurrency = new ConcurrencyLimiter({ store, limit: 1, leaseTtl: '10m' });
        const url = await start({
          limiters: [{ store, policies: fixedWindow({ limit: 1, window: '1m' }), concurrency }],
        });
        expect((await request(url).get('/')).status).toBe(200);
        for (let i = 0; i < 3; i++) expect((await request(url).get('/')).status).toBe(429);
        const slot = await concurrency.acquire('ip:127.0.0.1');
        expect(slot.allowed).toBe(true);
        await slot.lease?.release();
      });
    });

    it('a throwing or rejecting onLimited reaches the error handler', async () => {
      for (const onLimited of [
        () => {
          throw new Error('onLimited broke');
        },
        async () => {
          throw new Error('onLimited broke');
        },
      ]) {
        const url = await start({
          limiters: [
            {
              store,
              prefix: randomKey(),
              policies: fixedWindow({ limit: 1, window: '1m' }),
              onLimited,
            },
          ],
        });
        expect((await request(url).get('/')).status).toBe(200);
        const broken = await request(url).get('/').timeout(5000);
        expect(broken.status).toBe(500);
        expect(broken.body.error).toMatchObject({ message: 'onLimited broke' });
        await close();
      }
    });
  });

  describe('options are read from own properties only; bad names are refused', () => {
    const policies = fixedWindow({ limit: 1, window: '1m' });

    it('a polluted Object.prototype changes nothing', async () => {
      const proto = Object.prototype as Record<string, unknown>;
      proto.cost = 0;
      proto.key = () => randomKey();
      proto.skip = () => true;
      let url: string;
      try {
        url = await start({ limiters: [{ store: memoryStore(), policies }] });
      } finally {
        delete proto.cost;
        delete proto.key;
        delete proto.skip;
      }
      expect((await request(url).get('/')).status).toBe(200);
      expect((await request(url).get('/')).status).toBe(429);
    });

    it.each([
      [{ policies, appKeyHeader: 'x app key' }, 'rateLimit.appKeyHeader'],
      [{ policies, appKeyHeader: 'x-app-key:' }, 'rateLimit.appKeyHeader'],
      [{ policies, appKeyHeader: 'ключ' }, 'rateLimit.appKeyHeader'],
      [{ policies, ...JSON.parse('{"__proto__": {"cost": 0}}') }, 'rateLimit.__proto__'],
      [
        { policies, concurrency: JSON.parse('{"limit": 1, "__proto__": {"limit": 9}}') },
        'rateLimit.concurrency.__proto__',
      ],
      [{ policies, key: 'appKey', unknownAppKey: 'drop' }, 'rateLimit.unknownAppKey'],
      [{ policies, key: 'appKey', verifyAppKey: true }, 'rateLimit.verifyAppKey'],
      [{ policies, key: 'ip', verifyAppKey: () => true }, 'rateLimit.verifyAppKey'],
      [
        { policies, ipHeader: { name: 'cf connecting ip', trustedFrom: ['10.0.0.0/8'] } },
        'rateLimit.ipHeader.name',
      ],
      [
        { policies, ipHeader: { name: 'cf-connecting-ip', trustedFrom: [] } },
        'rateLimit.ipHeader.trustedFrom',
      ],
      [
        {
          policies,
          ipHeader: { name: 'cf-connecting-ip', trustedFrom: ['10.0.0.0/8', '10.0.0.0/33'] },
        },
        'rateLimit.ipHeader.trustedFrom[1]',
      ],
      [
        {
          policies,
          ipHeader: [
            { name: 'x-real-ip', trustedFrom: ['10.0.0.0/8'] },
            { name: 'cf-connecting-ip', trustedFrom: ['010.0.0.0/8'] },
          ],
        },
        'rateLimit.ipHeader[1].trustedFrom[0]',
      ],
      [
        { policies, ipHeader: { name: 'cf-connecting-ip', trustedFrom: ['300.1.2.0/24'] } },
        'rateLimit.ipHeader.trustedFrom[0]',
      ],
      [
        { policies, ipHeader: { name: 'cf-connecting-ip', trustedFrom: ['2400:cb00::/129'] } },
        'rateLimit.ipHeader.trustedFrom[0]',
      ],
      [
        { policies, ipHeader: { name: 'cf-connecting-ip', trustedFrom: ['::1'], from: 'x' } },
        'rateLimit.ipHeader.from',
      ],
      [
        { policies, validate: { FLOODGATE_NO_SUCH_CODE: false } },
        'rateLimit.validate.FLOODGATE_NO_SUCH_CODE',
      ],
    ])('%p is refused naming %s', async (options, field) => {
      await expect(start({ limiters: [options] })).rejects.toMatchObject({
        name: 'RateLimitConfigError',
        field,
      });
    });
  });
});
