/**
 * Hostile keys: braces, colons, NUL, unicode, 1 MB, look-alikes of escaped and hashed keys, and
 * a flood of 100 000 distinct keys. No two keys may share state, no key may leave its hash tag,
 * the memory store stays within maxKeys, and every Redis key carries a TTL.
 */
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis, keysWithTtl } from '../../../../test/harness/redis.js';
import {
  fixedWindow,
  gcra,
  memoryStore,
  RateLimiter,
  redisStore,
  type Store,
  slidingLog,
} from '../../src/index.js';
import { encodeKey } from '../../src/keys.js';

jest.setTimeout(45_000);

const MB = 'k'.repeat(1024 * 1024);
const HOSTILE = [
  '{',
  '}',
  '{}',
  'a}b',
  'a%7Db',
  'a%257Db',
  '%',
  '%25',
  'user}:gcra',
  'user',
  'user:',
  ':user',
  'a:b',
  'a::b',
  'rl:{user}:fw',
  'nul\0',
  'nul',
  '\0',
  'ünïcødé',
  'unicode',
  '🚦🚦',
  '\u{1F6A6}',
  'e\u0301',
  'é',
  MB,
  `${MB}x`,
  'x'.repeat(256),
  'x'.repeat(257),
  `%H${encodeKey(MB).slice(2)}`,
  encodeKey(MB),
];
// '🚦🚦' and '\u{1F6A6}' differ; 'e\u0301' and 'é' are different strings (no normalisation).
const DISTINCT = [...new Set(HOSTILE)];

/** Redis Cluster's hash tag: between the first `{` and the first `}` after it. */
function hashTag(storageKey: string): string {
  const open = storageKey.indexOf('{');
  const close = storageKey.indexOf('}', open + 1);
  return storageKey.slice(open + 1, close);
}

let redis: Redis;
beforeAll(() => {
  redis = connectIoredis();
});
beforeEach(async () => {
  await flushRedis(redis);
});
afterAll(async () => {
  await redis.quit();
});

const stores: Array<[string, () => Store]> = [
  ['memory', () => memoryStore()],
  ['redis', () => redisStore({ client: redis })],
];

describe.each(stores)('%s store', (_label, makeStore) => {
  test('hostile keys never share state and never leave their hash tag', async () => {
    const limiter = new RateLimiter({
      store: makeStore(),
      policies: [fixedWindow({ limit: 1, window: '1h' }), slidingLog({ limit: 1, window: '1h' })],
      onStoreError: 'closed',
    });
    const storageKeys = new Set<string>();
    for (const key of DISTINCT) {
      const keys = limiter.storageKeys(key);
      for (const k of keys) {
        expect(hashTag(k)).toBe(encodeKey(key));
        storageKeys.add(k);
      }
      expect(new Set(keys.map(hashTag)).size).toBe(1);
    }
    // Two policies and the block state per key.
    expect(storageKeys.size).toBe(DISTINCT.length * 3);
    // Each key admits its one request; a collision would show as a denial.
    const first = [];
    for (const key of DISTINCT) first.push(await limiter.consume(key));
    expect(first.map((d) => [d.allowed, d.reason])).toEqual(DISTINCT.map(() => [true, undefined]));
    const second = [];
    for (const key of DISTINCT) second.push(await limiter.consume(key));
    expect(second.map((d) => d.allowed)).toEqual(DISTINCT.map(() => false));
  });
});

test('every Redis key written for hostile keys carries a TTL, and 1 MB keys are stored hashed', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 2, window: '1h' }), gcra({ limit: 2, window: '1h' })],
  });
  for (const key of DISTINCT) await limiter.consume(key);
  const keys = await keysWithTtl(redis);
  expect(keys).toHaveLength(DISTINCT.length * 2);
  for (const { key, pttl } of keys) {
    expect([key.length < 600, pttl > 0 && pttl <= 3_600_000]).toEqual([true, true]);
  }
});

test('a flood of 100 000 distinct keys on Redis: one key each, all with a TTL', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: redis }),
    // GCRA keys live an hour from their own write: no aligned window can end mid-flood and
    // expire the first keys before they are counted (a 1-minute fixed window did, on a slow run).
    policies: [gcra({ limit: 1, window: '1h' })],
    onStoreError: 'closed',
    timeout: '10s',
  });
  const total = 100_000;
  let admitted = 0;
  for (let start = 0; start < total; start += 5_000) {
    const batch = await Promise.all(
      Array.from({ length: 5_000 }, (_, i) => limiter.consume(`flood:${start + i}`)),
    );
    admitted += batch.filter((d) => d.allowed && d.reason === undefined).length;
  }
  expect(admitted).toBe(total);
  expect(await redis.dbsize()).toBe(total);
  // keysWithTtl asks one key at a time; for 100 000 keys, scan and pipeline the PTTLs.
  let cursor = '0';
  let scanned = 0;
  let withoutTtl = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 5_000);
    cursor = next;
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.pttl(key);
    for (const [, pttl] of (await pipeline.exec()) ?? []) {
      if (!((pttl as number) > 0)) withoutTtl++;
    }
    scanned += keys.length;
  } while (cursor !== '0');
  expect([scanned, withoutTtl]).toEqual([total, 0]);
});

test('a flood of 100 000 distinct keys stays within maxKeys and never evicts a live key', async () => {
  // A frozen clock: the victim's window must not roll over while the flood runs.
  const now = Date.now();
  const store = memoryStore({ maxKeys: 10_000, clock: () => now });
  const limiter = new RateLimiter({
    store,
    policies: [fixedWindow({ limit: 1, window: '1m' })],
  });
  expect((await limiter.consume('victim')).allowed).toBe(true);
  const reasons = new Map<string, number>();
  let largest = 0;
  for (let i = 0; i < 100_000; i++) {
    const d = await limiter.consume(`flood:${i}`);
    const label = d.allowed ? 'allowed' : (d.reason ?? 'denied');
    reasons.set(label, (reasons.get(label) ?? 0) + 1);
    largest = Math.max(largest, store.size);
  }
  expect(largest).toBe(10_000);
  expect(Object.fromEntries(reasons)).toEqual({ allowed: 9_999, 'store-full': 90_001 });
  // The victim's counter survived the flood: it is still limited.
  expect((await limiter.consume('victim')).allowed).toBe(false);
});
