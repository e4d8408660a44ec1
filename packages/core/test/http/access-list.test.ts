/**
 * `allow` and `deny` over every adapter (Express 4/5, Koa 2/3, Fastify) and both stores: IPv4,
 * IPv6, CIDRs, IPv4-mapped folding, predicates, a trusted proxy hop, `ipHeader`, and that a
 * forged X-Forwarded-For without trust never gets a client onto the allowlist.
 */
import { fixedWindow, type Store } from '@floodgate/core';
import {
  ACCESS_DENIED_TYPE,
  onAccessList,
  parseAccessList,
  parseIpAddress,
} from '@floodgate/core/http';
import { rateLimit } from '@floodgate/express';
import { FRAMEWORKS, storesOn, useTestApp, useTestRedisConnection } from '@floodgate/http-test-kit';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import request from 'supertest';
import { flushRedis } from '../../../../test/harness/redis';
import { configErrorOf } from '../config-error';

type Req = { get(name: string): string | undefined };

const redis = useTestRedisConnection();

// A fixed clock, 45 s before the end of a minute: headers are exact.
const clock = () => 1_700_000_055_000;
const stores = storesOn(clock, redis);

const policies = fixedWindow({ limit: 1, window: '1m', name: 'per-minute' });

describe.each(FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  describe.each(stores)('on the %s store', (storeName, makeStore) => {
    let store: Store;
    beforeEach(async () => {
      if (storeName === 'redis') await flushRedis(redis());
      store = makeStore();
    });

    it('allow (IPv4 address): not counted, no headers; others are limited', async () => {
      const url = await start({ limiters: [{ store, policies, allow: ['127.0.0.1'] }] });
      for (let i = 0; i < 3; i++) {
        const res = await request(url).get('/');
        expect(res.status).toBe(200);
        expect(res.headers.ratelimit).toBeUndefined();
        expect(res.headers['ratelimit-policy']).toBeUndefined();
        expect(res.body.rateLimit).toBeNull();
      }
      if (storeName === 'redis') expect(await redis().dbsize()).toBe(0);
    });

    it('deny: 403 problem+json with its own type, no headers, the store never touched', async () => {
      const url = await start({ limiters: [{ store, policies, deny: ['127.0.0.0/8'] }] });
      for (let i = 0; i < 3; i++) {
        const res = await request(url).get('/');
        expect(res.status).toBe(403);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers.ratelimit).toBeUndefined();
        expect(JSON.parse(res.text)).toEqual({
          type: ACCESS_DENIED_TYPE,
          title: 'Forbidden',
          status: 403,
          detail: 'Requests from this client are not accepted.',
        });
      }
      if (storeName === 'redis') expect(await redis().dbsize()).toBe(0);
    });

    it('behind a trusted proxy: IPv4 and IPv6 CIDRs, IPv4-mapped folded both ways', async () => {
      const url = await start({
        trustProxy: 1,
        limiters: [
          {
            store,
            policies,
            allow: ['10.0.0.0/8', '2001:db8:aa::/48', '::ffff:192.0.2.0/120'],
            deny: ['10.9.0.0/16', '2001:db8:bad::1'],
          },
        ],
      });
      const from = (ip: string) => request(url).get('/').set('X-Forwarded-For', ip);
      const allowed = [
        '10.1.2.3',
        '::ffff:10.200.0.1',
        '2001:db8:aa:ffff::7',
        '192.0.2.200',
        '::ffff:192.0.2.1',
      ];
      for (const ip of allowed) {
        const res = await from(ip);
        expect([ip, res.status, res.headers.ratelimit]).toEqual([ip, 200, undefined]);
      }
      // Deny is checked first: a banned range inside an allowed network stays banned.
      for (const ip of ['10.9.1.1', '::ffff:10.9.0.1', '2001:db8:bad::1']) {
        expect([ip, (await from(ip)).status]).toEqual([ip, 403]);
      }
      // Neither list: limited as usual.
      expect((await from('2001:db8:bad::2')).headers.ratelimit).toBe('"per-minute";r=0;t=45');
      expect((await from('2001:db8:bad::3')).status).toBe(429);
      expect((await from('11.0.0.1')).status).toBe(200);
      expect((await from('11.0.0.1')).status).toBe(429);
    });

    it('a forged X-Forwarded-For without a trusted proxy never reaches the allowlist', async () => {
      const url = await start({
        limiters: [{ store, policies, allow: ['198.51.100.7'], validate: false }],
      });
      const forged = () => request(url).get('/').set('X-Forwarded-For', '198.51.100.7');
      const first = await forged();
      expect(first.status).toBe(200);
      expect(first.headers.ratelimit).toBe('"per-minute";r=0;t=45');
      expect((await forged()).status).toBe(429);
    });

    it('ipHeader: a CDN header from a trusted range is the address the lists match', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies,
            ipHeader: { name: 'cf-connecting-ip', trustedFrom: ['127.0.0.1'] },
            allow: ['203.0.113.0/24'],
            deny: ['198.51.100.66'],
          },
        ],
      });
      const via = (ip: string) => request(url).get('/').set('CF-Connecting-IP', ip);
      expect((await via('203.0.113.9')).headers.ratelimit).toBeUndefined();
      expect((await via('203.0.113.9')).status).toBe(200);
      expect((await via('198.51.100.66')).status).toBe(403);
      expect((await via('198.51.100.1')).status).toBe(200);
      expect((await via('198.51.100.1')).status).toBe(429);
    });

    it('predicates (sync and async) decide; a throwing predicate goes to the error handler', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies,
            allow: async (req: Req) => {
              await new Promise((resolve) => setImmediate(resolve));
              return req.get('x-probe') === 'health';
            },
            deny: (req: Req) => {
              if (req.get('x-boom')) throw new Error('list lookup failed');
              return req.get('user-agent') === 'BadBot/1.0';
            },
          },
        ],
      });
      expect((await request(url).get('/').set('User-Agent', 'BadBot/1.0')).status).toBe(403);
      const broken = await request(url).get('/').set('X-Boom', '1');
      expect(broken.status).toBe(500);
      expect(broken.body.error.message).toBe('list lookup failed');
      for (let i = 0; i < 2; i++) {
        expect((await request(url).get('/').set('X-Probe', 'health')).status).toBe(200);
      }
      // Nothing above was charged: the client's one request a minute is still there.
      expect((await request(url).get('/')).status).toBe(200);
      expect((await request(url).get('/')).status).toBe(429);
    });
  });
});

describe('allow/deny configuration', () => {
  it.each([
    [{ deny: ['10.0.0.1', '10.0.0.0/8', '10.0.0.0/33'] }, 'rateLimit.deny[2]'],
    [{ allow: ['2001:db8::/129'] }, 'rateLimit.allow[0]'],
    [{ allow: ['010.0.0.1'] }, 'rateLimit.allow[0]'],
    [{ allow: ['10.1'] }, 'rateLimit.allow[0]'],
    [{ deny: ['example.com'] }, 'rateLimit.deny[0]'],
    [{ deny: [42] }, 'rateLimit.deny[0]'],
    [{ deny: '10.0.0.0/8' }, 'rateLimit.deny'],
    [{ allow: true }, 'rateLimit.allow'],
  ])('%j is refused at construction, naming %s', (lists, field) => {
    const error = configErrorOf(() => rateLimit({ policies, ...(lists as object) }));
    expect(error.code).toBe('FLOODGATE_INVALID_OPTION');
    expect(error.field).toBe(field);
  });
});

describe('list matching', () => {
  const on = (entries: string[], address: string) =>
    onAccessList(parseAccessList<unknown>(entries, 'allow')!, parseIpAddress(address), undefined);

  it.each([
    [['0.0.0.0/0'], '203.0.113.7', true],
    [['0.0.0.0/0'], '2001:db8::1', false],
    [['::/0'], '2001:db8::1', true],
    [['::/0'], '10.0.0.1', false],
    [['10.0.0.1'], '10.0.0.1', true],
    [['10.0.0.1'], '10.0.0.2', false],
    [['128.0.0.0/1'], '200.1.1.1', true],
    [['128.0.0.0/1'], '100.1.1.1', false],
    [['2001:db8:f000::/36'], '2001:db8:fabc::1', true],
    [['2001:db8:f000::/36'], '2001:db8:e000::1', false],
    [['2001:db8::8/125'], '2001:db8::f', true],
    [['2001:db8::8/125'], '2001:db8::7', false],
    [['::ffff:192.0.2.128/121'], '192.0.2.200', true],
    [['::ffff:192.0.2.128/121'], '::ffff:192.0.2.100', false],
    [['fe80::/10'], 'fe80::1%eth0', true],
    [['10.0.0.0/8'], 'not-an-ip', false],
    [['10.0.0.0/8'], '010.0.0.1', false],
  ] as const)('%j holds %s: %s', async (entries, address, expected) => {
    expect(await on([...entries], address)).toBe(expected);
  });

  it('agrees with ipaddr.js on random addresses and ranges', async () => {
    const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
    const v6 = fc
      .array(fc.nat(0xffff), { minLength: 8, maxLength: 8 })
      .map((g) => g.map((n) => n.toString(16)).join(':'));
    // Ranges near the address, so that matches and misses both happen.
    const near = (address: string, other: string, bits: number, flip: boolean) => {
      const base = flip ? other : address;
      return `${base}/${bits}`;
    };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.tuple(v4, v4, fc.nat(32), fc.boolean()),
          fc.tuple(v6, v6, fc.nat(128), fc.boolean()),
        ),
        async ([address, other, bits, flip]) => {
          const cidr = near(address, other, bits, flip);
          const [net, length] = ipaddr.parseCIDR(cidr);
          const expected = ipaddr.parse(address).match(net, length);
          expect(await on([cidr], address)).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
