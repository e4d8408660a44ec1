/**
 * `limiter.resetAll()`: every key of one limiter forgotten, on the memory store and on Redis
 * through each standalone client (and an ioredis `keyPrefix`), nothing of other limiters.
 */
import { Redis } from 'ioredis';
import { testRedisUrl, workerDb } from '../../../../test/harness/redis';
import {
  fixedWindow,
  memoryStore,
  RateLimiter,
  RateLimitStoreError,
  redisStore,
  type Store,
} from '../../src/index';
import { type ConnectedClient, connectStandalone, STANDALONE_KINDS } from '../resilience/clients';
import { resetAllScenario } from './reset-all.scenario';

const clock = () => 1_700_000_040_000;
let run = 0;

describe('resetAll on the memory store', () => {
  it('forgets every key of the limiter, blocks included, and nothing else', async () => {
    const store = memoryStore({ clock });
    await resetAllScenario(store, 'mem');
  });

  it('reaches an onStoreError fallback store too', async () => {
    const fallback = memoryStore({ clock });
    const failing: Store = {
      kind: 'broken',
      prepare: (policies) => {
        const real = memoryStore({ clock }).prepare(policies);
        return { ...real, decide: () => Promise.reject(new Error('down')), decideNow: undefined };
      },
    };
    const limiter = new RateLimiter({
      store: failing,
      onStoreError: fallback,
      policies: fixedWindow({ limit: 1, window: '1m' }),
    });
    expect((await limiter.consume('k')).reason).toBe('fallback');
    expect((await limiter.consume('k')).allowed).toBe(false);
    await limiter.resetAll();
    expect((await limiter.consume('k')).allowed).toBe(true);
  });

  it('refuses a store that cannot reset all with a RateLimitStoreError', async () => {
    const store: Store = {
      kind: 'toy',
      prepare: (policies) => {
        const { resetAll: _, ...rest } = memoryStore({ clock }).prepare(policies);
        return rest;
      },
    };
    const limiter = new RateLimiter({ store, policies: fixedWindow({ limit: 1, window: '1m' }) });
    await expect(limiter.resetAll()).rejects.toThrow(RateLimitStoreError);
  });
});

describe.each(STANDALONE_KINDS)('resetAll on Redis (%s)', (kind) => {
  let connected: ConnectedClient;
  beforeAll(async () => {
    connected = await connectStandalone(kind);
  });
  afterAll(async () => {
    await connected.close();
  });

  it('SCANs for the limiter keys and deletes only them', async () => {
    const prefix = `resetall${process.pid}x${run++}`;
    const store = redisStore({ client: connected.client, clock, batch: false });
    await resetAllScenario(store, prefix);
  });
});

describe('resetAll on Redis with an ioredis keyPrefix', () => {
  it('matches and deletes the keys under the client prefix', async () => {
    const client = new Redis(testRedisUrl(), { db: workerDb(), keyPrefix: 'app1:' });
    const plain = new Redis(testRedisUrl(), { db: workerDb() });
    try {
      const prefix = `resetallkp${process.pid}x${run++}`;
      await resetAllScenario(redisStore({ client, clock, batch: false }), prefix);
      const left = await plain.keys(`app1:${prefix}:*`);
      // Only the other limiter's keys (gcra: one per caller); the scenario's last resetAll took the rest.
      expect(left.length).toBe(32);
      expect(await plain.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      client.disconnect();
      plain.disconnect();
    }
  });
});
