/**
 * Redis at its memory limit. With an evicting maxmemory-policy an attacker minting keys can push
 * a victim's counter out of Redis (every limiter key has a TTL, so volatile-* policies evict them
 * too): the store warns once. With noeviction a full Redis refuses writes: an over-limit key must
 * stay limited (before, the refused writes of new keys opened the circuit breaker and 'open'
 * then admitted everyone, the victim's attacker included).
 */
import { Redis } from 'ioredis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server.js';
import { fixedWindow, gcra, RateLimiter, redisStore } from '../../src/index.js';

jest.setTimeout(60_000);

const FROZEN = 1_700_000_000_000;

/** Warning codes emitted while it runs (process.emitWarning, spied as the other suites do). */
function warningsDuring(): { codes: () => string[]; stop: () => void } {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  const codes = () =>
    spy.mock.calls.map((call) => String((call[1] as { code?: string } | undefined)?.code));
  return { codes, stop: () => spy.mockRestore() };
}

async function settle(ms = 100): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

describe('maxmemory-policy', () => {
  let server: RedisServerHandle;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedisServer({ args: ['--maxmemory', '64mb'] });
    client = new Redis(server.url);
  });
  afterAll(async () => {
    client.disconnect();
    await server?.stop();
  });

  test.each(['allkeys-lru', 'volatile-ttl'])(
    '%s: one warning naming the policy, however many stores',
    async (policy) => {
      await client.config('SET', 'maxmemory-policy', policy);
      const warnings = warningsDuring();
      try {
        for (let i = 0; i < 3; i++) {
          const limiter = new RateLimiter({
            store: redisStore({ client }),
            policies: fixedWindow({ limit: 5, window: '1m' }),
          });
          await limiter.consume(`k${i}`);
        }
        await settle();
        expect(warnings.codes().filter((c) => c === 'FLOODGATE_EVICTING_MAXMEMORY')).toHaveLength(
          1,
        );
      } finally {
        warnings.stop();
      }
    },
  );

  test('noeviction: no warning', async () => {
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    const warnings = warningsDuring();
    try {
      const limiter = new RateLimiter({
        store: redisStore({ client }),
        policies: fixedWindow({ limit: 5, window: '1m' }),
      });
      await limiter.consume('quiet');
      await settle();
      expect(warnings.codes()).not.toContain('FLOODGATE_EVICTING_MAXMEMORY');
    } finally {
      warnings.stop();
    }
  });
});

describe.each([true, false])('a full Redis under noeviction (batch: %s)', (batch) => {
  let server: RedisServerHandle;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedisServer({
      args: ['--maxmemory-policy', 'noeviction'],
    });
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await server?.stop();
  });

  test('an over-limit key stays limited, new keys get the failure policy, the breaker stays closed', async () => {
    const client = new Redis(server.url);
    const failures: string[] = [];
    const limiter = new RateLimiter({
      hooks: { onStoreError: (e) => void failures.push(e.error.message) },
      store: redisStore({ client, clock: () => FROZEN, batch }),
      policies: fixedWindow({ limit: 3, window: '1h' }),
      onStoreError: 'open',
    });
    for (let i = 0; i < 3; i++)
      expect((await limiter.consume('victim-of-attack')).allowed).toBe(true);
    expect((await limiter.consume('victim-of-attack')).allowed).toBe(false);
    expect((await limiter.consume('half-used')).allowed).toBe(true);

    // Redis full: more data than a maxmemory set below it, so every write is refused.
    const blob = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 32; i++) await admin.set(`junk:${i}`, blob);
    await admin.config('SET', 'maxmemory', '1mb');
    await expect(admin.set('probe', '1')).rejects.toThrow(/OOM/);

    // Many new keys: Redis refuses their writes; 'open' admits them, without opening the breaker.
    const fresh = await Promise.all(
      Array.from({ length: 40 }, (_, i) => limiter.consume(`new-${i}`)),
    );
    for (const d of fresh) {
      expect(d.allowed).toBe(true);
      expect(d.reason).toBe('store-error');
    }
    expect(failures[0]).toMatch(/OOM/);
    expect(limiter.circuit).toBe('closed');
    // The over-limit key is still decided by Redis: denied, not waved through.
    const victim = await limiter.consume('victim-of-attack');
    expect(victim.allowed).toBe(false);
    expect(victim.reason).toBeUndefined();
    // An existing key with room would need a write: the failure policy answers it.
    const halfUsed = await limiter.consume('half-used');
    expect(halfUsed.reason).toBe('store-error');
    client.disconnect();
    await admin.config('SET', 'maxmemory', '0');
    for (let i = 0; i < 32; i++) await admin.del(`junk:${i}`);
  });

  // Several policies in one key per caller: a decision's reply comes inline in a batch's reply,
  // and a refused write of the state comes after it (lua/include/batch.lua): the failed call
  // must answer its error alone, and its neighbours in the batch their own decisions.
  test('several policies: refused writes fail alone, a denial beside them stands', async () => {
    const client = new Redis(server.url);
    const limiter = new RateLimiter({
      store: redisStore({ client, clock: () => FROZEN, batch }),
      policies: [fixedWindow({ limit: 2, window: '1h' }), gcra({ limit: 100, window: '1h' })],
      prefix: 'full3',
      onStoreError: 'open',
    });
    for (let i = 0; i < 2; i++) expect((await limiter.consume('over')).allowed).toBe(true);
    await admin.config('SET', 'maxmemory', '1mb');
    const blob = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 32; i++) await admin.set(`junk:${i}`, blob).catch(() => undefined);
    await expect(admin.set('probe', '1')).rejects.toThrow(/OOM/);

    const keys = ['over', 'new-a', 'over', 'new-b', 'new-c', 'over', 'new-d', 'new-e', 'over'];
    const decisions = await Promise.all(keys.map((k) => limiter.consume(k)));
    keys.forEach((key, i) => {
      const d = decisions[i]!;
      if (key === 'over') {
        // Denied by Redis (nothing to write), with both policies' results.
        expect(d.allowed).toBe(false);
        expect(d.reason).toBeUndefined();
        expect(d.policies.map((p) => p.allowed)).toEqual([false, true]);
      } else {
        expect(d.allowed).toBe(true);
        expect(d.reason).toBe('store-error');
      }
    });
    client.disconnect();
  });
});
