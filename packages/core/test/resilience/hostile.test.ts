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

/**
 * Keys with every C0 control character, DEL, C1 controls, separators, BOM, noncharacters and
 * non-BMP code points (surrogate pairs), next to look-alikes that differ by one such character:
 * each is its own counter, on Redis exactly as in memory (the twins decide the same), and Redis
 * stores the key's UTF-8 bytes losslessly.
 */
const CONTROL_AND_ASTRAL = (() => {
  const keys = new Set<string>();
  for (let c = 0; c < 0x20; c++) {
    keys.add(String.fromCharCode(c));
    keys.add(`k${String.fromCharCode(c)}k`);
  }
  for (const c of [0x7f, 0x80, 0x85, 0x9f, 0xa0, 0x2028, 0x2029, 0xfeff, 0xfffe, 0xffff]) {
    keys.add(`k${String.fromCharCode(c)}k`);
  }
  for (const cp of [0x10000, 0x10400, 0x1f600, 0x1f601, 0x1d49c, 0xe0001, 0x10fffd, 0x10ffff]) {
    keys.add(String.fromCodePoint(cp));
    keys.add(`k${String.fromCodePoint(cp)}k`);
  }
  for (const k of ['k', 'kk', 'a', 'a\0', 'a\0\0', '\0a', '\r\n', '\n', '\n\r', 'a\tb', 'a b']) {
    keys.add(k);
  }
  // Long enough to be stored hashed: they differ only in their last character.
  const long = 'x'.repeat(300);
  for (const tail of ['\0', '\x01', '\x7f', '\u{1F600}', '\u{1F601}', '\u{10FFFF}', '']) {
    keys.add(long + tail);
  }
  return [...keys];
})();

test('control characters, NUL and non-BMP keys: distinct, and the same decisions on both stores', async () => {
  const decide = async (store: Store) => {
    const limiter = new RateLimiter({
      store,
      policies: [fixedWindow({ limit: 3, window: '1h' }), gcra({ limit: 3, window: '1h' })],
      onStoreError: 'closed',
    });
    const out: Array<[boolean, number]> = [];
    // Key i is asked (i % 4) + 1 times, interleaved: a shared counter would deny early.
    for (let round = 0; round < 4; round++) {
      for (const [i, key] of CONTROL_AND_ASTRAL.entries()) {
        if (round > i % 4) continue;
        const d = await limiter.consume(key);
        expect(d.reason).toBeUndefined();
        out.push([d.allowed, d.remaining]);
      }
    }
    return { out, limiter };
  };
  const memory = await decide(memoryStore());
  const onRedis = await decide(redisStore({ client: redis }));
  expect(onRedis.out).toEqual(memory.out);
  // Distinct: every key's 4th request (and only it) is denied, its first has 2 left.
  const expected: Array<[boolean, number]> = [];
  for (let round = 0; round < 4; round++) {
    for (const i of CONTROL_AND_ASTRAL.keys()) {
      if (round <= i % 4) expected.push([round < 3, Math.max(0, 2 - round)]);
    }
  }
  expect(memory.out).toEqual(expected);
  // Redis holds exactly the storage keys the limiter names, byte for byte (one state key each:
  // both policies' states in one; the block key is not written).
  const stored = (await keysWithTtl(redis)).map((k) => k.key).sort();
  const named = CONTROL_AND_ASTRAL.flatMap((k) => onRedis.limiter.storageKeys(k).slice(0, -1));
  expect(stored).toEqual([...named].sort());
});

test('every Redis key written for hostile keys carries a TTL, and 1 MB keys are stored hashed', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 2, window: '1h' }), gcra({ limit: 2, window: '1h' })],
  });
  for (const key of DISTINCT) await limiter.consume(key);
  const keys = await keysWithTtl(redis);
  // One key per caller: both policies' states in it.
  expect(keys).toHaveLength(DISTINCT.length);
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
