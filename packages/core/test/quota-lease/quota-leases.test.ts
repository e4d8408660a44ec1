/**
 * Quota leases on a limiter (`lease`): decisions answered from blocks taken in one store call,
 * never more admitted per window than the limit across several limiters sharing one key (as
 * app servers would), blocks that end with the window (or sub-window) they were charged in,
 * blocks given back on close, 'auto' leasing only hot keys, and the option's errors.
 */
import type { Redis } from 'ioredis';
import { useTestRedis } from '../../../../test/harness/redis';
import {
  type Decision,
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  type Policy,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
  type Store,
  slidingWindow,
  tokenBucket,
} from '../../src/index';
import { fakeClock, T0 } from '../../src/testing/table';

const redis = useTestRedis();

/** A limiter whose store calls are counted (hooks.onStoreCall sees every guarded call). */
function counted(store: Store, policies: Policy[], lease: unknown, prefix = 'ql') {
  const calls = { n: 0, byKey: new Map<string, number>() };
  const limiter = new RateLimiter({
    store,
    policies,
    prefix,
    lease: lease as never,
    hooks: {
      onStoreCall: ({ key }) => {
        calls.n++;
        calls.byKey.set(key, (calls.byKey.get(key) ?? 0) + 1);
      },
    },
  });
  return { limiter, calls };
}

const STORES: Array<[string, (clock: () => number) => Store]> = [
  ['memory', (clock) => memoryStore({ clock })],
  ['redis', (clock) => redisStore({ client: redis() as Redis, clock, batch: false })],
];

describe.each(STORES)('quota leases (%s store)', (_, makeStore) => {
  it('answers a window of decisions from blocks: one take per block, then the limit holds', async () => {
    const time = fakeClock();
    const { limiter, calls } = counted(
      makeStore(time.clock),
      [fixedWindow({ limit: 100, window: '1s' })],
      { units: 10 },
    );
    const answers: Decision[] = [];
    for (let i = 0; i < 100; i++) answers.push(await limiter.consume('hot'));
    expect(answers.every((d) => d.allowed)).toBe(true);
    expect(calls.n).toBe(10);
    const denied = await limiter.consume('hot');
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfter).toBe(1000);
    // The next window: blocks again.
    time.now = T0 + 1000;
    expect((await limiter.consume('hot')).allowed).toBe(true);
    await limiter.close();
  });

  it('never admits more than the limit per window across limiters sharing the key', async () => {
    const time = fakeClock();
    const store = makeStore(time.clock);
    const policies = [fixedWindow({ limit: 50, window: '1s' })];
    const holders = [1, 2, 3].map(() => counted(store, policies, { units: { min: 4, max: 16 } }));
    const perWindow = new Map<number, number>();
    for (let step = 0; step < 800; step++) {
      time.now = T0 + step * 10;
      const w = Math.floor(step / 100);
      // Quiet windows (30 calls: blocks left over at their end) before busy ones (300 calls).
      if (w % 2 === 0 && step % 10 !== 9) continue;
      for (const { limiter } of holders) {
        const d = await limiter.consume('global');
        if (d.allowed) perWindow.set(w, (perWindow.get(w) ?? 0) + 1);
      }
    }
    expect(perWindow.size).toBe(8);
    expect([...perWindow.values()].every((n) => n <= 50)).toBe(true);
    // Busy windows: under-admission at most (P - 1) · max units.
    const busy = [...perWindow].filter(([w]) => w % 2 === 1).map(([, n]) => n);
    expect(busy.every((n) => n >= 50 - 2 * 16)).toBe(true);
    for (const { limiter } of holders) await limiter.close();
  });

  it('spends a slidingWindow block only in the sub-window it was charged in', async () => {
    const time = fakeClock();
    const { limiter, calls } = counted(
      makeStore(time.clock),
      [slidingWindow({ limit: 100, window: '1s', buckets: 10 })],
      { units: 20, ttl: '10s' },
    );
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect(calls.n).toBe(1);
    time.now = T0 + 99;
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect(calls.n).toBe(1);
    // The next sub-window: the 18 units left are not spent there; a new take.
    time.now = T0 + 100;
    expect((await limiter.consume('k')).allowed).toBe(true);
    expect(calls.n).toBe(2);
    await limiter.close();
  });

  it('gives a gcra block back on close, so other holders can spend it', async () => {
    const time = fakeClock();
    const store = makeStore(time.clock);
    const policies = [gcra({ limit: 10, window: '1s', burst: 10 })];
    const a = counted(store, policies, { units: 8 });
    const b = counted(store, policies, { units: 8 });
    expect((await a.limiter.consume('k')).allowed).toBe(true);
    // a holds 7 units: the store has 2 left (a read: cost 0).
    expect((await b.limiter.peek('k', { cost: 0 })).remaining).toBe(2);
    await a.limiter.close();
    expect((await b.limiter.peek('k', { cost: 0 })).remaining).toBe(9);
    await b.limiter.close();
  });

  it('shares one take among the calls that wait for it (one in flight per key)', async () => {
    const time = fakeClock();
    const { limiter, calls } = counted(
      makeStore(time.clock),
      [tokenBucket({ limit: 1000, window: '1s' })],
      { units: 64 },
    );
    const answers = await Promise.all(Array.from({ length: 64 }, () => limiter.consume('k')));
    expect(answers.every((d) => d.allowed)).toBe(true);
    expect(calls.n).toBe(1);
    await limiter.close();
  });

  it("'auto' leases the keys the sketch flags hot, and decides the others one by one", async () => {
    const time = fakeClock();
    const { limiter, calls } = counted(
      makeStore(time.clock),
      [fixedWindow({ limit: 1_000_000, window: '1h' })],
      'auto',
    );
    for (let i = 0; i < 300; i++) {
      time.now = T0 + i;
      await limiter.consume('hot');
      await limiter.consume(`cold${i}`);
    }
    // The hot key takes a few blocks (once the sketch has seen enough traffic); every cold key
    // is decided by the store (a guarded call on Redis; the memory store answers in process).
    expect(calls.byKey.get('hot')).toBeLessThan(100);
    if (limiter.store.kind === 'redis') expect(calls.n - calls.byKey.get('hot')!).toBe(300);
    await limiter.close();
  });
});

describe('the lease option', () => {
  const store = memoryStore();
  const make = (policies: Policy[], lease: unknown) => () =>
    new RateLimiter({ store, policies, lease: lease as never });

  it.each([
    ['a leakyBucket', [leakyBucket({ limit: 5, window: '1s' })], 'policies[0]'],
    ['a lockout', [gcra({ limit: 5, window: '1s', blockDuration: '1m' })], 'blockDuration'],
    [
      'an extendWindow',
      [fixedWindow({ limit: 5, window: '1s', extendWindow: 'on-hit' })],
      'extendWindow',
    ],
  ])('refuses %s with FLOODGATE_NO_LEASE naming the field', (_, policies, says) => {
    const error = (() => {
      try {
        make(policies, { units: 5 })();
      } catch (e) {
        return e as RateLimitConfigError;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect(error?.code).toBe('FLOODGATE_NO_LEASE');
    expect(error?.field).toBe('RateLimiter.lease');
    expect(error?.message).toContain(says);
  });

  it.each([
    [{ units: 0 }, 'RateLimiter.lease.units'],
    [{ units: { min: 5, max: 2 } }, 'RateLimiter.lease.units.max'],
    [{ units: 5, ttl: 'soon' }, 'RateLimiter.lease.ttl'],
    [{ units: 5, keys: 'some' }, 'RateLimiter.lease.keys'],
    [{ units: 5, size: 3 }, 'RateLimiter.lease.size'],
    ['always', 'RateLimiter.lease'],
  ])('refuses %j naming %s', (lease, field) => {
    expect(make([gcra({ limit: 5, window: '1s' })], lease)).toThrow(
      expect.objectContaining({ field }),
    );
  });
});
