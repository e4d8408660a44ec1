/**
 * Limits chosen per request (`policies` as a function), shadow mode and `resetKey`, over real
 * servers for every adapter (Express 4 and 5, Koa 2 and 3, Fastify) and every store (memory, the
 * harness Redis); then `resetKey` across two processes sharing Redis.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import {
  type Decision,
  fixedWindow,
  memoryStore,
  type Policy,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
  type Store,
} from '@floodgate/core';
import { POLICY_SET_CACHE_SIZE, parseHttpRateLimitOptions } from '@floodgate/core/http';
import {
  FRAMEWORKS,
  holdRequests,
  httpStores,
  type MountedLimiter,
  useTestApp,
  useTestRedisConnection,
} from '@floodgate/http-test-kit';
import request from 'supertest';
import { flushRedis, testRedisUrl, workerDb } from '../../../../test/harness/redis';

type Req = { get(name: string): string | undefined };

// Aligned to a minute, so a fixed window of 1m has exactly 45 s left at T0.
const WINDOW_START = 1_700_000_040_000;
const T0 = WINDOW_START + 15_000;

const redis = useTestRedisConnection();
const stores = httpStores(redis);

/** A plan's policies, built anew on every call (as a database lookup would). */
const plans: Record<string, () => Policy[]> = {
  free: () => [fixedWindow({ limit: 2, window: '1m', name: 'free' })],
  pro: () => [fixedWindow({ limit: 5, window: '1m', name: 'pro' })],
};
// Koa's ctx.get answers '' for a missing header.
const planOf = (req: unknown) => (req as Req).get('x-plan') || 'free';

/** The FLOODGATE_ warning codes emitted so far in the running test, in order. */
function useWarnings(): () => string[] {
  let spy: jest.SpyInstance | undefined;
  beforeEach(() => {
    spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  });
  afterEach(() => {
    spy?.mockRestore();
  });
  return () =>
    (spy?.mock.calls ?? [])
      .map((call) => (call[1] as { code?: string } | undefined)?.code ?? '')
      .filter((code) => code.startsWith('FLOODGATE_'));
}

describe.each(FRAMEWORKS)('%s', (framework, serve) => {
  const { start } = useTestApp(serve);
  const warnings = useWarnings();

  describe.each(stores)('on the %s store', (storeName, makeStore) => {
    let now = T0;
    const clock = () => now;
    let store: Store;
    // One prefix per table row: middlewares of earlier rows on the same Redis client may still be
    // alive (not yet collected), and would rightly be reported as sharing a budget.
    const prefix = `${framework}-${storeName}`.replace(/\s/g, '');
    beforeEach(async () => {
      now = T0;
      if (storeName === 'redis') await flushRedis(redis());
      store = makeStore(clock);
    });

    it('per-plan limits: a plan change mid-window moves the key to the new set, never to a stale denial', async () => {
      let handles: readonly MountedLimiter[] = [];
      let seen: unknown;
      const url = await start({
        limiters: [{ store, prefix, policies: (req: unknown) => plans[planOf(req)]!() }],
        onMounted: (mounted) => {
          handles = mounted;
        },
        onHandler: (req) => {
          seen = req;
        },
      });
      const get = (plan: string) => request(url).get('/').set('x-plan', plan);
      expect((await get('free')).status).toBe(200);
      const freeLimiter = await handles[0]!.limiterFor(seen);
      expect((await get('free')).headers.ratelimit).toBe('"free";r=0;t=45');
      // The same plan as new objects on every request: one limiter.
      expect(await handles[0]!.limiterFor(seen)).toBe(freeLimiter);
      expect(handles[0]!.limiter).toBeUndefined();
      const denied = await get('free');
      expect(denied.status).toBe(429);
      expect(denied.headers['ratelimit-policy']).toBe('"free";q=2;w=60');

      // Upgraded mid-window: the pro set's own state, not the free denial (cached on Redis).
      const upgraded = await get('pro');
      expect(upgraded.status).toBe(200);
      expect(upgraded.headers.ratelimit).toBe('"pro";r=4;t=45');
      expect(upgraded.body.rateLimit).toMatchObject({ policy: 'pro', limit: 5, remaining: 4 });
      expect(await handles[0]!.limiterFor(seen)).not.toBe(freeLimiter);
      // Back on free within the window: its state still holds.
      expect((await get('free')).status).toBe(429);
      now = WINDOW_START + 60_000;
      expect((await get('free')).status).toBe(200);
      expect(warnings()).toEqual([]);
    });

    it('live limits: an override set on limiterFor(req) answers the next request, per plan set', async () => {
      let handles: readonly MountedLimiter[] = [];
      let seen: unknown;
      const url = await start({
        limiters: [
          {
            store,
            prefix: `${prefix}-live`,
            key: () => 'acme',
            liveLimits: true,
            policies: (req: unknown) => plans[planOf(req)]!(),
          },
        ],
        onMounted: (mounted) => {
          handles = mounted;
        },
        onHandler: (req) => {
          seen = req;
        },
      });
      const get = (plan: string) => request(url).get('/').set('x-plan', plan);
      expect((await get('free')).status).toBe(200);
      expect((await get('free')).status).toBe(200);
      expect((await get('free')).status).toBe(429);
      // The customer's free plan raised to 4 for this key: 2 used, 2 more at once.
      const limiter = (await handles[0]!.limiterFor(seen)) as RateLimiter;
      await limiter.setLimit('acme', { policy: 'free', limit: 4 }, { carry: 'additive' });
      const raised = await get('free');
      expect(raised.status).toBe(200);
      expect(raised.headers.ratelimit).toBe('"free";r=1;t=45');
      expect(raised.headers['ratelimit-policy']).toBe('"free";q=4;w=60');
      expect((await get('free')).status).toBe(200);
      expect((await get('free')).status).toBe(429);
      // The pro set is a limiter of its own: untouched.
      expect((await get('pro')).headers.ratelimit).toBe('"pro";r=4;t=45');
    });

    it('a plan whose limits change in the database takes effect at once, despite a cached denial', async () => {
      let freeLimit = 1;
      const url = await start({
        limiters: [
          { store, policies: () => fixedWindow({ limit: freeLimit, window: '1m', name: 'free' }) },
        ],
      });
      expect((await request(url).get('/')).status).toBe(200);
      expect((await request(url).get('/')).status).toBe(429);
      freeLimit = 3;
      const raised = await request(url).get('/');
      expect(raised.status).toBe(200);
      expect(raised.headers.ratelimit).toBe('"free";r=2;t=45');
    });

    it.each([
      ['throws', () => Promise.reject(new Error('plans database down')), /database down/],
      ['returns undefined', () => undefined, /returned undefined/],
      ['returns an empty array', () => [], /non-empty array of policies/],
      ['returns a non-policy', () => [{ limit: 5 }], /non-empty array of policies/],
      [
        'returns two policies with one name',
        () => [
          fixedWindow({ limit: 1, window: '1s', name: 'same' }),
          fixedWindow({ limit: 9, window: '1m', name: 'same' }),
        ],
        /already the name of/,
      ],
    ])(
      'a policies function that %s fails the request with a typed error',
      async (_what, policies, message) => {
        const url = await start({ limiters: [{ store, policies }] });
        const res = await request(url).get('/');
        expect(res.status).toBe(500);
        expect(res.body.error).toMatchObject({
          name: 'RateLimitArgumentError',
          code: 'FLOODGATE_INVALID_ARGUMENT',
          argument: 'policies',
        });
        expect(res.body.error.message).toMatch(message);
        // The server is still up and the next request fails the same way (no crash, no cache).
        expect((await request(url).get('/')).status).toBe(500);
      },
    );

    it("count: 'failed' with a policies function refunds to the request's own set", async () => {
      const url = await start({
        limiters: [{ store, policies: (req: unknown) => plans[planOf(req)]!(), count: 'failed' }],
      });
      for (let i = 0; i < 3; i++) {
        const ok = await request(url).get('/');
        expect(ok.status).toBe(200);
        // Charged up front, given back once the 200 was sent.
        expect(ok.headers.ratelimit).toBe('"free";r=1;t=45');
      }
    });

    it(`the cache keeps at most ${POLICY_SET_CACHE_SIZE} sets; an evicted set resumes from its stored state`, async () => {
      let handles: readonly MountedLimiter[] = [];
      const captured = new Map<string, unknown>();
      const url = await start({
        limiters: [
          {
            store,
            prefix,
            policies: (req: unknown) =>
              fixedWindow({ limit: 1, window: '1m', name: `tier-${(req as Req).get('x-tier')}` }),
          },
        ],
        onMounted: (mounted) => {
          handles = mounted;
        },
        onHandler: (req) => captured.set((req as Req).get('x-tier')!, req),
      });
      const get = (tier: number) => request(url).get('/').set('x-tier', String(tier));
      expect((await get(0)).status).toBe(200);
      const first = await handles[0]!.limiterFor(captured.get('0'));
      for (let tier = 1; tier <= POLICY_SET_CACHE_SIZE; tier++) {
        expect((await get(tier)).status).toBe(200);
      }
      // Tier 0 was the least recently used: rebuilt, yet its spent budget is still spent.
      const denied = await get(0);
      expect(denied.status).toBe(429);
      expect(denied.headers['ratelimit-policy']).toBe('"tier-0";q=1;w=60');
      expect(await handles[0]!.limiterFor(captured.get('0'))).not.toBe(first);
      const recent = await handles[0]!.limiterFor(captured.get(String(POLICY_SET_CACHE_SIZE)));
      expect(await handles[0]!.limiterFor(captured.get(String(POLICY_SET_CACHE_SIZE)))).toBe(
        recent,
      );
      // A set rebuilt after eviction is the same middleware's budget, not a shared one.
      expect(warnings()).toEqual([]);
    });

    it('diagnostics with a policies function: one function mounted twice shares and double-counts', async () => {
      const policies = (req: unknown) => plans[planOf(req)]!();
      const url = await start({
        limiters: [
          { store, prefix: `${prefix}-twice`, policies },
          { store, prefix: `${prefix}-twice`, policies },
        ],
      });
      for (let i = 0; i < 3; i++) await request(url).get('/');
      expect(warnings()).toEqual(['FLOODGATE_SHARED_BUDGET', 'FLOODGATE_DOUBLE_COUNT']);
    });

    it('shadow: would-be denials reach req.rateLimit and the hooks; no 429, no onLimited, no headers', async () => {
      const hooked: [boolean, boolean | undefined, boolean | undefined][] = [];
      const limited: unknown[] = [];
      const url = await start({
        limiters: [
          {
            store,
            policies: fixedWindow({ limit: 1, window: '1m', name: 'per-minute' }),
            shadow: true,
            onLimited: () => limited.push(1),
            hooks: {
              onDecision: (d: Decision, context: { shadow?: boolean }) =>
                hooked.push([d.allowed, d.shadow, context.shadow]),
            },
          },
        ],
      });
      const responses = [await request(url).get('/'), await request(url).get('/')];
      expect(responses.map((r) => r.status)).toEqual([200, 200]);
      for (const res of responses) {
        for (const name of ['ratelimit', 'ratelimit-policy', 'retry-after', 'x-ratelimit-limit']) {
          expect(res.headers[name]).toBeUndefined();
        }
      }
      expect(responses[1]!.body.rateLimit).toMatchObject({
        allowed: false,
        shadow: true,
        policy: 'per-minute',
        retryAfter: 45_000,
      });
      expect(responses[0]!.body.rateLimit).toMatchObject({ allowed: true, shadow: true });
      expect(hooked).toEqual([
        [true, true, true],
        [false, true, true],
      ]);
      expect(limited).toEqual([]);
    });

    it('shadow with concurrency: a would-be refusal runs without a slot and costs no rate budget', async () => {
      const hold = holdRequests();
      const url = await start({
        onHold: hold.onHold,
        limiters: [
          {
            store,
            policies: fixedWindow({ limit: 100, window: '1m', name: 'per-minute' }),
            concurrency: { limit: 1 },
            shadow: true,
          },
        ],
      });
      const held = request(url)
        .get('/hold')
        .then((res) => res);
      await hold.reached;
      const busy = await request(url).get('/');
      expect(busy.status).toBe(200);
      expect(busy.body.rateLimit).toMatchObject({
        allowed: false,
        shadow: true,
        policy: 'concurrency-1',
      });
      hold.finish();
      expect((await held).status).toBe(200);
      // Only the held request was charged to the rate policy.
      const after = await request(url).get('/');
      expect(after.body.rateLimit).toMatchObject({ allowed: true, shadow: true, remaining: 98 });
    });

    it('shadow with a lockout: the block is written and reported, never enforced', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies: fixedWindow({ limit: 1, window: '1m', name: 'login', blockDuration: '1h' }),
            shadow: true,
          },
        ],
      });
      const bodies = [];
      for (let i = 0; i < 3; i++) {
        const res = await request(url).get('/');
        expect(res.status).toBe(200);
        bodies.push(res.body.rateLimit);
      }
      expect(bodies[1]).toMatchObject({ allowed: false, shadow: true, policy: 'login' });
      expect(bodies[2]).toMatchObject({
        allowed: false,
        shadow: true,
        reason: 'blocked',
        retryAfter: 3_600_000,
      });
    });

    it.each([
      ['key', { key: () => Promise.reject(new Error('no session')) }],
      ['cost', { cost: () => Promise.reject(new Error('pricing down')) }],
      ['policies', { policies: () => Promise.reject(new Error('plans database down')) }],
      ['skip', { skip: () => Promise.reject(new Error('skip list down')) }],
    ])(
      'shadow: a %s function that fails lets the request through uncounted (FLOODGATE_SHADOW_ERROR once); enforcing, it is a 500',
      async (_what, failing) => {
        const options = { store, policies: plans.free!(), ...failing };
        const url = await start({ limiters: [{ ...options, shadow: true }] });
        const statuses = [];
        for (let i = 0; i < 3; i++) {
          const res = await request(url).get('/');
          statuses.push(res.status);
          expect(res.body.rateLimit).toBeNull();
        }
        expect(statuses).toEqual([200, 200, 200]);
        expect(warnings().filter((c) => c === 'FLOODGATE_SHADOW_ERROR')).toHaveLength(1);
        const enforcing = await start({ limiters: [options] });
        expect((await request(enforcing).get('/')).status).toBe(500);
      },
    );

    it('shadow: a deny list still answers 403 (lists are enforced in shadow mode)', async () => {
      const url = await start({
        limiters: [{ store, policies: plans.free!(), shadow: true, deny: () => true }],
      });
      expect((await request(url).get('/')).status).toBe(403);
      expect(warnings()).not.toContain('FLOODGATE_SHADOW_ERROR');
    });

    it('shadow with headers given: the limit headers, but never Retry-After on a 200', async () => {
      const url = await start({
        limiters: [
          {
            store,
            policies: (req: unknown) => plans[planOf(req)]!(),
            shadow: true,
            headers: true,
          },
        ],
      });
      for (let i = 0; i < 2; i++) await request(url).get('/');
      const res = await request(url).get('/');
      expect(res.status).toBe(200);
      expect(res.headers.ratelimit).toBe('"free";r=0;t=45');
      expect(res.headers['retry-after']).toBeUndefined();
      expect(res.body.rateLimit).toMatchObject({ allowed: false, shadow: true, policy: 'free' });
    });

    it('resetKey(req) resets that key under every policy and clears the local denied cache', async () => {
      let handles: readonly MountedLimiter[] = [];
      let seen: unknown;
      const url = await start({
        limiters: [
          {
            store,
            policies: [
              fixedWindow({ limit: 1, window: '1m', name: 'per-minute' }),
              fixedWindow({ limit: 5, window: '1h', name: 'per-hour' }),
            ],
          },
        ],
        onMounted: (mounted) => {
          handles = mounted;
        },
        onHandler: (req) => {
          seen = req;
        },
      });
      expect((await request(url).get('/')).status).toBe(200);
      expect((await request(url).get('/')).status).toBe(429);
      await handles[0]!.resetKey(seen);
      const after = await request(url).get('/');
      expect(after.status).toBe(200);
      expect(after.headers.ratelimit).toBe('"per-minute";r=0;t=45, "per-hour";r=4;t=2745');
      expect(handles[0]!.limiter).toBe(await handles[0]!.limiterFor(seen));
    });

    it("resetKey with a policies function resets the request's current set", async () => {
      let handles: readonly MountedLimiter[] = [];
      let seen: unknown;
      const url = await start({
        limiters: [{ store, policies: (req: unknown) => plans[planOf(req)]!() }],
        onMounted: (mounted) => {
          handles = mounted;
        },
        onHandler: (req) => {
          seen = req;
        },
      });
      const get = (plan: string) => request(url).get('/').set('x-plan', plan);
      for (let i = 0; i < 2; i++) expect((await get('free')).status).toBe(200);
      expect((await get('free')).status).toBe(429);
      await get('pro');
      await handles[0]!.resetKey(seen); // seen: the pro request
      expect((await get('pro')).headers.ratelimit).toBe('"pro";r=4;t=45');
      expect((await get('free')).status).toBe(429);
    });
  });
});

describe('construction checks', () => {
  const where = (options: Record<string, unknown>) => {
    try {
      parseHttpRateLimitOptions(options, 'rateLimit');
    } catch (error) {
      return error as RateLimitConfigError;
    }
    return undefined;
  };
  const plan = () => fixedWindow({ limit: 1, window: '1s' });

  it('a policies function: the other limiter options are checked at once, not on a request', () => {
    expect(where({ policies: plan, prefix: 'a{b' })).toMatchObject({ field: 'rateLimit.prefix' });
    expect(where({ policies: plan, hooks: 5 })).toMatchObject({ field: 'rateLimit.hooks' });
    expect(where({ policies: plan, deniedCache: { maxKeys: -1 } })).toMatchObject({
      field: 'rateLimit.deniedCache.maxKeys',
    });
    expect(where({ policies: plan, count: 'failed', prefix: 'plans' })).toBeUndefined();
  });

  it('shadow: a boolean, and never with a ready limiter', () => {
    expect(where({ policies: plan(), shadow: 'yes' })).toMatchObject({ field: 'rateLimit.shadow' });
    const limiter = new RateLimiter({ store: memoryStore(), policies: plan() });
    expect(where({ limiter, shadow: true })).toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: 'rateLimit.shadow',
    });
    expect(where({ limiter, shadow: false })).toBeUndefined();
  });
});

describe('the shared-budget diagnostic with many policy sets', () => {
  const warnings = useWarnings();
  const tier = (n: number) => fixedWindow({ limit: 1, window: '1m', name: `tier-${n}` });

  it(`notes only a middleware's first ${POLICY_SET_CACHE_SIZE} sets (per-tenant limits must not grow it)`, async () => {
    const store = memoryStore();
    const sets = parseHttpRateLimitOptions<{ n: number }>(
      { store, prefix: 'tenants', policies: (req: { n: number }) => tier(req.n) },
      'rateLimit',
    ).policySets!;
    for (let n = 0; n < POLICY_SET_CACHE_SIZE + 50; n++) await sets.limiterFor({ n });
    // A set seen after the first ones was not noted: a route on the same budget is not reported.
    parseHttpRateLimitOptions({ store, prefix: 'tenants', policies: tier(120) }, 'rateLimit');
    expect(warnings()).toEqual([]);
    parseHttpRateLimitOptions({ store, prefix: 'tenants', policies: tier(0) }, 'rateLimit');
    expect(warnings()).toEqual(['FLOODGATE_SHARED_BUDGET']);
  });
});

describe.each(FRAMEWORKS)('%s: resetKey across two processes sharing Redis', (_name, serve) => {
  const { start } = useTestApp(serve);
  let child: ChildProcess;
  let childUrl: string;
  let now = T0;

  beforeEach(async () => {
    now = T0;
    await flushRedis(redis());
    child = fork(join(__dirname, '../../../../tools/http-test-kit/src/reset-key-child.ts'), [], {
      execArgv: [join(__dirname, '../resilience/run-ts.cjs')],
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        REDIS_DB: String(workerDb()),
        CLOCK_START_MS: String(T0),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const { port } = await new Promise<{ port: number }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { port: number }));
      child.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
    });
    childUrl = `http://127.0.0.1:${port}`;
  });
  afterEach(async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.disconnect();
    await exited;
  });

  it("a reset in one process frees the key in the other once its denied cache's maxAge has passed", async () => {
    let handles: readonly MountedLimiter[] = [];
    let seen: unknown;
    const url = await start({
      limiters: [
        {
          store: redisStore({ client: redis(), clock: () => now }),
          policies: fixedWindow({ limit: 2, window: '1m', name: 'per-minute' }),
        },
      ],
      onMounted: (mounted) => {
        handles = mounted;
      },
      onHandler: (req) => {
        seen = req;
      },
    });
    expect((await request(url).get('/')).status).toBe(200);
    expect((await request(childUrl).get('/')).status).toBe(200);
    expect((await request(childUrl).get('/')).status).toBe(429); // cached in the child
    expect((await request(url).get('/')).status).toBe(429); // cached here

    await handles[0]!.resetKey(seen);
    expect((await request(url).get('/')).headers.ratelimit).toBe('"per-minute";r=1;t=45');
    // The child still answers its cached denial: up to maxAge (1 s) by its clock.
    expect((await request(childUrl).get('/')).status).toBe(429);
    await request(childUrl).post('/advance?ms=1001');
    const freed = await request(childUrl).get('/');
    expect(freed.status).toBe(200);
    expect(freed.body.rateLimit).toMatchObject({ allowed: true, remaining: 0 });

    // And the other way round: the child resets, this process sees it after its maxAge.
    expect((await request(url).get('/')).status).toBe(429);
    expect((await request(childUrl).post('/reset')).body).toEqual({ reset: true });
    expect((await request(url).get('/')).status).toBe(429);
    now += 1001;
    expect((await request(url).get('/')).status).toBe(200);
  });
});
