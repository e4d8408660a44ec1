/** Bad call arguments throw typed errors; hostile keys work, never collide and never split slots. */
import calculateSlot from 'cluster-key-slot';
import { useTestRedis } from '../../../../test/harness/redis';
import {
  fixedWindow,
  gcra,
  memoryStore,
  RateLimitArgumentError,
  RateLimiter,
  redisStore,
  type Store,
  slidingLog,
} from '../../src/index';
import { encodeKey } from '../../src/keys';

const testRedis = useTestRedis();

const stores: Array<[string, () => Store]> = [
  ['memory', () => memoryStore()],
  ['redis', () => redisStore({ client: testRedis() })],
];

describe.each(stores)('call arguments on the %s store', (_name, makeStore) => {
  const limiter = () =>
    new RateLimiter({ store: makeStore(), policies: fixedWindow({ limit: 5, window: '1m' }) });

  test.each([
    ['an empty key', ''],
    ['a number', 42],
    ['undefined', undefined],
    ['null', null],
    ['an object', { id: 1 }],
  ])('key: %s', async (_what, key) => {
    const l = limiter();
    for (const call of [
      () => l.consume(key as string),
      () => l.peek(key as string),
      () => l.reset(key as string),
    ]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RateLimitArgumentError);
      expect(error).toBeInstanceOf(RangeError);
      expect(error).toMatchObject({ code: 'FLOODGATE_INVALID_ARGUMENT', argument: 'key' });
    }
  });

  test.each([-1, Number.NaN, 1.5, Number.POSITIVE_INFINITY, '1', 2 ** 53])(
    'cost %p',
    async (cost) => {
      const l = limiter();
      await expect(l.consume('user', { cost: cost as number })).rejects.toMatchObject({
        name: 'RateLimitArgumentError',
        argument: 'cost',
      });
      await expect(l.peek('user', { cost: cost as number })).rejects.toBeInstanceOf(
        RateLimitArgumentError,
      );
      // Nothing was charged by the refused calls.
      expect((await l.peek('user')).remaining).toBe(4);
    },
  );

  test('maxWait that is not a duration', async () => {
    await expect(limiter().acquire('user', { maxWait: 'later' as never })).rejects.toMatchObject({
      argument: 'maxWait',
    });
  });
});

const HOSTILE_KEYS = [
  'userA:APIX',
  'a}b',
  'a',
  '{a}',
  '}',
  '{',
  'a%7Db',
  'a%b',
  '%H',
  'x:{y}:z',
  'nul\u0000byte',
  'nul',
  'emoji 🚦 ключ 鍵',
  'rl:{a}:fw',
  'x'.repeat(10 * 1024),
  `${'x'.repeat(10 * 1024)}y`,
  'é',
  'e\u0301',
];

describe('hostile keys', () => {
  test('encodeKey is one-to-one and never lets `}` through', () => {
    const encoded = HOSTILE_KEYS.map(encodeKey);
    expect(new Set(encoded).size).toBe(HOSTILE_KEYS.length);
    for (const tag of encoded) {
      expect(tag).not.toContain('}');
      expect(tag.length).toBeLessThanOrEqual(256);
    }
  });

  test('every storage key of one decision hashes to the same cluster slot', () => {
    const limiter = new RateLimiter({
      store: memoryStore(),
      policies: [
        fixedWindow({ limit: 1, window: '1s' }),
        gcra({ limit: 5, window: '1s' }),
        slidingLog({ limit: 9, window: '1m' }),
      ],
    });
    for (const key of HOSTILE_KEYS) {
      const slots = new Set(limiter.storageKeys(key).map((k) => calculateSlot(k)));
      expect(slots.size).toBe(1);
      // The tag is the encoded key exactly, so the slot is the key's own.
      expect([...slots][0]).toBe(calculateSlot(`{${encodeKey(key)}}`));
    }
  });

  test.each(stores)(
    'on the %s store each hostile key has its own counter',
    async (_name, makeStore) => {
      const limiter = new RateLimiter({
        store: makeStore(),
        // GCRA: no aligned window edge can reset every counter between the two passes.
        policies: gcra({ limit: 1, window: '1m' }),
      });
      for (const key of HOSTILE_KEYS) expect((await limiter.consume(key)).allowed).toBe(true);
      for (const key of HOSTILE_KEYS) expect((await limiter.consume(key)).allowed).toBe(false);
    },
  );
});
