/**
 * A real local Redis Cluster (6 nodes, 3 masters + 3 replicas): the conformance table through
 * every cluster client, multi-policy limiters without CROSSSLOT, keys spread over slots, and a
 * failover (a master killed by PID) that decisions ride through under the failure policy, with
 * EVALSHA and with `scripts: 'functions'`.
 */
import { Redis } from 'ioredis';
import { type RedisClusterHandle, startRedisCluster } from '../../../../test/harness/cluster.js';
import { withNode } from '../../../../test/harness/redis.js';
import {
  ConcurrencyLimiter,
  type Decision,
  fixedWindow,
  gcra,
  memoryStore,
  RateLimiter,
  redisStore,
  slidingLog,
  tokenBucket,
} from '../../src/index.js';
import { keySlot as clientKeySlot } from '../../src/stores/redis-batch.js';
import { SCENARIOS } from '../conformance/algorithms/index.js';
import { describeConformance } from '../conformance/table.js';
import { CLUSTER_KINDS, type ConnectedClient, connectCluster } from './clients.js';

jest.setTimeout(45_000);

let cluster: RedisClusterHandle;
/** A plain connection to one node, for CLUSTER KEYSLOT. */
let probe: Redis;

beforeAll(async () => {
  cluster = await startRedisCluster();
  probe = new Redis({ host: '127.0.0.1', port: cluster.nodes[0]!.port });
}, 60_000);

afterAll(async () => {
  probe?.disconnect();
  await cluster?.stop();
});

const keySlot = async (key: string): Promise<number> => Number(await probe.cluster('KEYSLOT', key));

const hostileKeys = [
  'user}{x',
  '{user}',
  'a:b:{c}:d',
  'ünï©ødé-🚦',
  'nul\0byte',
  'x'.repeat(1024 * 1024),
];

const allPolicies = () => [
  fixedWindow({ limit: 5, window: '1m' }),
  slidingLog({ limit: 5, window: '1m' }),
  tokenBucket({ limit: 5, window: '1m' }),
  gcra({ limit: 5, window: '1m' }),
];

describe.each(CLUSTER_KINDS)('%s', (kind) => {
  const tag = `${process.pid}-${kind.replace(/\W+/g, '-')}`;
  let connected: ConnectedClient;
  beforeAll(async () => {
    connected = await connectCluster(kind, cluster.startupNodes);
  });
  afterAll(async () => {
    await connected?.close();
  });
  beforeEach(async () => {
    await connected.flushScripts();
  });

  describeConformance(`${kind} on a local cluster`, SCENARIOS, (clock) =>
    redisStore({ client: connected.client, clock }),
  );

  describeConformance(
    `${kind} on a local cluster, batched per slot`,
    SCENARIOS,
    (clock) => redisStore({ client: connected.client, clock, batch: { maxDecisions: 4 } }),
    'at once',
  );

  test('batching is off by default on a cluster client (batches stay within a slot), on when asked', () => {
    expect(redisStore({ client: connected.client }).batch).toBeUndefined();
    expect(redisStore({ client: connected.client, batch: true }).batch).toEqual({
      maxDecisions: 128,
      maxBytes: 64 * 1024,
    });
    expect(redisStore({ client: connected.client, batch: { maxDecisions: 8 } }).batch).toEqual({
      maxDecisions: 8,
      maxBytes: 64 * 1024,
    });
  });

  test('batches are made per slot: the store computes every key slot as the cluster does', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: connected.client }),
      policies: [fixedWindow({ limit: 5, window: '1m' })],
      prefix: `slots-${tag}`,
    });
    const keys = [...hostileKeys, ...Array.from({ length: 50 }, (_, i) => `user${i}`)];
    for (const key of keys) {
      const storageKey = limiter.storageKeys(key)[0]!;
      expect(clientKeySlot(storageKey)).toBe(await keySlot(storageKey));
    }
    expect(clientKeySlot('no-tag')).toBe(await keySlot('no-tag'));
    expect(clientKeySlot('{}empty')).toBe(await keySlot('{}empty'));
  });

  test('concurrent decisions on keys of several slots: batched per slot, exact per key', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: connected.client, batch: { maxDecisions: 8 } }),
      policies: [fixedWindow({ limit: 5, window: '1m' }), gcra({ limit: 7, window: '1m' })],
      prefix: `batched-${tag}`,
      onStoreError: 'closed',
    });
    const keys = Array.from({ length: 12 }, (_, i) => `caller${i}`);
    const decisions = await Promise.all(
      Array.from({ length: 240 }, (_, i) => limiter.consume(keys[i % keys.length]!)),
    );
    expect(decisions.filter((d) => d.reason !== undefined)).toEqual([]);
    keys.forEach((_, k) => {
      const mine = decisions.filter((_, i) => i % keys.length === k);
      expect(mine.map((d) => d.allowed)).toEqual([
        ...new Array(5).fill(true),
        ...new Array(15).fill(false),
      ]);
    });
  });

  test('a four-policy limiter decides in one script per key (no CROSSSLOT) and exactly', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: connected.client }),
      policies: allPolicies(),
      prefix: `multi-${tag}`,
      onStoreError: 'closed',
    });
    for (const key of hostileKeys) {
      const slots = new Set(await Promise.all(limiter.storageKeys(key).map(keySlot)));
      expect(slots.size).toBe(1);
      const decisions: Decision[] = [];
      for (let i = 0; i < 8; i++) decisions.push(await limiter.consume(key));
      expect(decisions.map((d) => d.reason)).toEqual(new Array(8).fill(undefined));
      expect(decisions.map((d) => d.allowed)).toEqual([
        ...new Array(5).fill(true),
        ...new Array(3).fill(false),
      ]);
    }
  });

  test('different keys spread over slots and every master, decided concurrently (regression: ioredis auto-pipelining grouped EVALSHA by the SHA1)', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: connected.client }),
      policies: [fixedWindow({ limit: 1, window: '1m' })],
      prefix: `spread-${tag}`,
    });
    const slots = await Promise.all(
      Array.from({ length: 300 }, (_, i) => keySlot(limiter.storageKeys(`user${i}`)[0]!)),
    );
    expect(new Set(slots).size).toBeGreaterThan(250);
    const masters = new Set<string>();
    for (const slot of new Set(slots)) masters.add((await cluster.masterOf(slot)).id);
    expect(masters.size).toBe(3);
    const decisions = await Promise.all(
      Array.from({ length: 300 }, (_, i) => limiter.consume(`user${i}`)),
    );
    expect(decisions.filter((d) => d.allowed && d.reason === undefined)).toHaveLength(300);
  });

  test('leases on keys of many slots, acquired and released concurrently, exact per key (regression: the lease path had its own runner without the auto-pipelining command)', async () => {
    const limiter = new ConcurrencyLimiter({
      store: redisStore({ client: connected.client }),
      limit: 1,
      leaseTtl: '1m',
      prefix: `leases-${tag}`,
      onStoreError: 'closed',
    });
    const first = await Promise.all(
      Array.from({ length: 200 }, (_, i) => limiter.acquire(`user${i}`)),
    );
    expect(first.filter((d) => d.allowed && d.reason === undefined && d.lease)).toHaveLength(200);
    const second = await Promise.all(
      Array.from({ length: 200 }, (_, i) => limiter.acquire(`user${i}`)),
    );
    expect(second.map((d) => [d.allowed, d.reason])).toEqual(
      new Array(200).fill([false, undefined]),
    );
    expect(await Promise.all(first.map((d) => d.lease!.release()))).toEqual(
      new Array(200).fill(true),
    );
    const third = await Promise.all(
      Array.from({ length: 200 }, (_, i) => limiter.acquire(`user${i}`)),
    );
    expect(third.filter((d) => d.allowed && d.reason === undefined)).toHaveLength(200);
  });
});

/**
 * Kills the master that serves `key`'s slot and keeps deciding every 20 ms until a replica has
 * taken over; returns what was answered meanwhile.
 */
async function decideThroughFailover(limiter: RateLimiter, key: string) {
  const slot = await keySlot(limiter.storageKeys(key)[0]!);
  const reasons: Array<string | undefined> = [];
  const failover = cluster.failover(slot);
  let done = false;
  const finished = failover.then(
    (victim) => {
      done = true;
      return victim;
    },
    (error) => {
      done = true;
      throw error;
    },
  );
  while (!done) {
    const d = await limiter.consume(key);
    reasons.push(d.reason);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const victim = await finished;
  return { reasons, victim };
}

/**
 * ioredis refreshes its slot map when a node stops answering, so it finds the promoted replica
 * on its own. node-redis (5.x) refreshes only on a MOVED reply, which a dead master never
 * sends: the store's shim provokes one (cluster-refresh.ts), so it finds the promoted replica
 * too, without the old master coming back. docs/reliability.md has more.
 */
describe.each([
  ['ioredis Cluster', 'evalsha'],
  ['node-redis cluster', 'evalsha'],
  ['ioredis Cluster', 'functions'],
  ['node-redis cluster', 'functions'],
] as const)('failover with %s (scripts: %s)', (kind, scripts) => {
  test('decisions continue from the fallback while a master is down, and are exact after', async () => {
    const connected = await connectCluster(kind, cluster.startupNodes);
    const failures: string[] = [];
    const messages: string[] = [];
    const limiter = new RateLimiter({
      store: redisStore({ client: connected.client, scripts }),
      policies: [fixedWindow({ limit: 3, window: '1m' }), gcra({ limit: 3, window: '1m' })],
      prefix: `failover${process.pid}`,
      onStoreError: memoryStore(),
      timeout: 250,
      circuitBreaker: { failureThreshold: 3, cooldown: 250 },
      hooks: {
        onStoreError: (event) => {
          failures.push(event.failure);
          messages.push(event.error.message);
        },
      },
    });
    const key = `tenant-${kind}-${scripts}`;
    try {
      expect((await limiter.consume(key)).reason).toBeUndefined();
      const { reasons, victim } = await decideThroughFailover(limiter, key);
      // Every call was answered; while the slot had no master the fallback decided.
      expect(reasons.length).toBeGreaterThan(0);
      expect(reasons).toContain('fallback');
      expect(failures.length).toBeGreaterThan(0);
      for (const r of reasons) expect([undefined, 'fallback']).toContain(r);

      // The old master stays dead until the end of the test. The promoted replica answers again (its script cache is empty: NOSCRIPT, then EVAL).
      const deadline = Date.now() + 15_000;
      let back: Decision | undefined;
      while (Date.now() < deadline) {
        back = await limiter.peek(key);
        if (back.reason === undefined) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(back?.reason).toBeUndefined();
      await limiter.reset(key);
      const after: Decision[] = [];
      for (let i = 0; i < 5; i++) after.push(await limiter.consume(key));
      expect(after.map((d) => [d.allowed, d.reason])).toEqual([
        [true, undefined],
        [true, undefined],
        [true, undefined],
        [false, undefined],
        [false, undefined],
      ]);

      if (scripts === 'functions') {
        // The promoted replica had the library by replication; a primary that never had it (a
        // node added later, a restart without persistence) gets it loaded by the store.
        await Promise.all(
          (await cluster.masters()).map((node) =>
            withNode(node.port, (c) => c.call('FUNCTION', 'FLUSH')),
          ),
        );
        const again = await Promise.all(Array.from({ length: 5 }, () => limiter.consume(key)));
        expect(again.map((d) => [d.allowed, d.reason])).toEqual(
          Array.from({ length: 5 }, () => [false, undefined]),
        );
        // Whatever failed during the failover, nothing was a script or function not found.
        expect(messages.filter((m) => /NOSCRIPT|function not found/i.test(m))).toEqual([]);
      }

      // The old master comes back as a replica of the new one.
      await victim.server.restart();
      await cluster.waitUntilOk();
    } finally {
      await connected.close();
    }
  });
});
