/**
 * Per-node batches (`redisStore({ batch: 'node' })`) on a real local Redis Cluster (3 masters,
 * 3 replicas): the conformance table, several slots of one master decided in one script, and a
 * slot that migrates (CLUSTER SETSLOT … MIGRATING / IMPORTING, MIGRATE of its keys) while
 * decisions run: each decision is made exactly once.
 */
import { Cluster, Redis } from 'ioredis';
import {
  type ClusterNode,
  type RedisClusterHandle,
  startRedisCluster,
} from '../../../../test/harness/cluster.js';
import { fixedWindow, gcra, RateLimiter, redisStore } from '../../src/index.js';
import { keySlot } from '../../src/stores/redis-batch.js';
import { SCENARIOS } from '../conformance/algorithms/index.js';
import { describeConformance } from '../conformance/table.js';
import { connectCluster } from './clients.js';

jest.setTimeout(90_000);

let cluster: RedisClusterHandle;
let client: Cluster;
const admins = new Map<number, Redis>();
const admin = (node: ClusterNode): Redis => {
  let connection = admins.get(node.port);
  if (connection === undefined) {
    connection = new Redis({ host: '127.0.0.1', port: node.port });
    admins.set(node.port, connection);
  }
  return connection;
};

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = new Cluster(cluster.startupNodes.map((n) => ({ ...n })));
  await client.ping();
}, 60_000);

afterAll(async () => {
  client?.disconnect();
  for (const connection of admins.values()) connection.disconnect();
  await cluster?.stop();
});

describeConformance('ioredis Cluster, batched per node', SCENARIOS, (clock) =>
  redisStore({ client, clock, batch: 'node' }),
);

/** Caller keys of `limiter` whose slots the master `node` serves, each of another slot. */
async function keysOn(
  limiter: RateLimiter,
  node: ClusterNode,
  count: number,
  from = 0,
): Promise<string[]> {
  const keys: string[] = [];
  const slots = new Set<number>();
  for (let i = from; keys.length < count && i < from + 100_000; i++) {
    const key = `caller${i}`;
    const slot = keySlot(limiter.storageKeys(key)[0]!);
    if (slots.has(slot) || (await cluster.masterOf(slot)).id !== node.id) continue;
    slots.add(slot);
    keys.push(key);
  }
  return keys;
}

const evalshaCalls = async (node: ClusterNode): Promise<number> => {
  const info = String(await admin(node).info('commandstats'));
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
};

const rejectedExists = async (node: ClusterNode): Promise<number> => {
  const info = String(await admin(node).info('commandstats'));
  return Number(/cmdstat_exists:.*rejected_calls=(\d+)/.exec(info)?.[1] ?? 0);
};

describe("batch: 'node'", () => {
  test('is read at construction, and refused where it cannot run', async () => {
    expect(redisStore({ client, batch: 'node' }).batch).toEqual({
      maxDecisions: 128,
      maxBytes: 64 * 1024,
      perNode: true,
    });
    expect(() => redisStore({ client, batch: 'nodes' as 'node' })).toThrow(/redisStore\.batch/);
    expect(() => redisStore({ client, batch: 'node', scripts: 'functions' })).toThrow(
      /redisStore\.batch .*scripts: 'functions'/,
    );
    const nodeRedis = await connectCluster('node-redis cluster', cluster.startupNodes);
    try {
      expect(() => redisStore({ client: nodeRedis.client, batch: 'node' })).toThrow(
        /redisStore\.batch .*node-redis cluster/,
      );
    } finally {
      await nodeRedis.close();
    }
  });

  test('decides calls of several slots of one master in one script, exactly per key', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: 'node' }),
      policies: [fixedWindow({ limit: 5, window: '1h' }), gcra({ limit: 7, window: '1h' })],
      prefix: 'per-node-spread',
      onStoreError: 'closed',
    });
    const [master] = await cluster.masters();
    const keys = await keysOn(limiter, master!, 24);
    const before = await evalshaCalls(master!);
    const decisions = await Promise.all(
      Array.from({ length: keys.length * 10 }, (_, i) => limiter.consume(keys[i % keys.length]!)),
    );
    const calls = (await evalshaCalls(master!)) - before;
    expect(decisions.filter((d) => d.reason !== undefined)).toEqual([]);
    keys.forEach((_, k) => {
      const mine = decisions.filter((_, i) => i % keys.length === k);
      expect(mine.map((d) => d.allowed)).toEqual([
        ...new Array(5).fill(true),
        ...new Array(5).fill(false),
      ]);
    });
    // 240 decisions on 24 slots of one master: a handful of scripts, not one per slot or call.
    expect(calls).toBeLessThan(24);
  });

  test('live limits: keys with overrides and keys without, over several slots, exactly per key', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: 'node' }),
      policies: [
        fixedWindow({ limit: 5, window: '1h', name: 'hour' }),
        gcra({ limit: 7, window: '1h', name: 'g' }),
      ],
      prefix: 'per-node-live',
      onStoreError: 'closed',
      liveLimits: true,
    });
    const [master] = await cluster.masters();
    const keys = await keysOn(limiter, master!, 24);
    // Every third key's hour is 3; every fourth's gcra 2.
    for (const [k, key] of keys.entries()) {
      if (k % 3 === 0) await limiter.setLimit(key, { policy: 'hour', limit: 3 });
      if (k % 4 === 0) await limiter.setLimit(key, { policy: 'g', limit: 2 });
    }
    const before = await evalshaCalls(master!);
    const decisions = await Promise.all(
      Array.from({ length: keys.length * 8 }, (_, i) => limiter.consume(keys[i % keys.length]!)),
    );
    const calls = (await evalshaCalls(master!)) - before;
    expect([...new Set(decisions.map((d) => d.reason))]).toEqual([undefined]);
    keys.forEach((_, k) => {
      const limit = Math.min(k % 3 === 0 ? 3 : 5, k % 4 === 0 ? 2 : 7);
      const mine = decisions.filter((_, i) => i % keys.length === k);
      expect([k, mine.filter((d) => d.allowed).length]).toEqual([k, limit]);
      expect(mine.slice(0, limit).every((d) => d.allowed)).toBe(true);
    });
    expect(calls).toBeLessThan(24);
    await limiter.close();
  });
});

/** Moves `slot` from `from` to `to` as redis-cli --cluster reshard does, key by key. */
async function migrate(slot: number, from: ClusterNode, to: ClusterNode): Promise<number> {
  await admin(to).cluster('SETSLOT', slot, 'IMPORTING', from.id);
  await admin(from).cluster('SETSLOT', slot, 'MIGRATING', to.id);
  let moved = 0;
  for (;;) {
    const keys = (await admin(from).cluster('GETKEYSINSLOT', slot, 2)) as string[];
    if (keys.length === 0) break;
    await admin(from).migrate('127.0.0.1', to.port, '', 0, 5000, 'KEYS', ...keys);
    moved += keys.length;
    // Decisions run between the moves: some keys of the slot are here, some there.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  for (const node of [to, from, ...(await cluster.masters())])
    await admin(node).cluster('SETSLOT', slot, 'NODE', to.id);
  return moved;
}

describe("batch: 'node' while a slot migrates", () => {
  test('a call of a migrating slot is not run in the batch: it goes alone, decided once the slot moved', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: 'node' }),
      policies: [fixedWindow({ limit: 3, window: '1h' })],
      prefix: 'per-node-ask',
      onStoreError: 'closed',
    });
    const [from, to] = await cluster.masters();
    const [moving, staying] = await keysOn(limiter, from!, 2, 200_000);
    const slot = keySlot(limiter.storageKeys(moving!)[0]!);
    await admin(to!).cluster('SETSLOT', slot, 'IMPORTING', from!.id);
    await admin(from!).cluster('SETSLOT', slot, 'MIGRATING', to!.id);
    // One tick: all four go to the master's channel together, as one per-node batch.
    const pending = [moving!, staying!, moving!, staying!].map((key) => limiter.consume(key));
    const staid = await Promise.all([pending[1]!, pending[3]!]);
    // Decided in the batch while the other slot migrates. The migrating slot's calls were not
    // run there; alone, the cluster answers them TRYAGAIN (its keys are on neither node) until
    // the slot has moved.
    expect(staid.map((d) => [d.allowed, d.remaining, d.reason])).toEqual([
      [true, 2, undefined],
      [true, 1, undefined],
    ]);
    expect((await admin(from!).cluster('GETKEYSINSLOT', slot, 10)) as string[]).toEqual([]);
    for (const node of [to!, from!, ...(await cluster.masters())])
      await admin(node).cluster('SETSLOT', slot, 'NODE', to!.id);
    const moved = await Promise.all([pending[0]!, pending[2]!]);
    expect(moved.map((d) => [d.allowed, d.remaining, d.reason])).toEqual([
      [true, 2, undefined],
      [true, 1, undefined],
    ]);
    // Made on the slot's new node only.
    expect((await admin(from!).cluster('GETKEYSINSLOT', slot, 10)) as string[]).toEqual([]);
    const onNew = (await admin(to!).cluster('GETKEYSINSLOT', slot, 10)) as string[];
    expect(onNew.length).toBeGreaterThan(0);
    expect(onNew.every((k) => k.startsWith(limiter.storageKeys(moving!)[0]!))).toBe(true);
  });

  test('a live migration under load: exactly the limit admitted per key, each decision once', async () => {
    const limit = 100;
    const limiter = new RateLimiter({
      store: redisStore({ client, batch: 'node' }),
      policies: [fixedWindow({ limit, window: '1d' })],
      prefix: 'per-node-live',
      onStoreError: 'closed',
    });
    const [from, to] = await cluster.masters();
    // Twelve keys in the slot that moves, twelve in other slots of its master.
    const first = (await keysOn(limiter, from!, 1, 300_000))[0]!;
    const slot = keySlot(limiter.storageKeys(first)[0]!);
    const moving = [first];
    for (let i = 0; moving.length < 12; i++) {
      const key = `${first}-${i}`;
      // Same slot: keys whose slot matches (the tag is the caller key).
      if (keySlot(limiter.storageKeys(key)[0]!) === slot) moving.push(key);
    }
    const staying = await keysOn(limiter, from!, 12, 400_000);
    const keys = [...moving, ...staying];
    // Every key's window starts, so that the slot holds keys to MIGRATE.
    await Promise.all(keys.map((key) => limiter.consume(key)));
    const admitted = new Map<string, number>(keys.map((key) => [key, 1]));
    const failed: string[] = [];
    let running = true;
    const worker = async (w: number) => {
      // Until the slot has moved, and at least three times the limit per key in all.
      for (let round = 0; running || round < (3 * limit * keys.length) / 64; round++) {
        const key = keys[(w + round) % keys.length]!;
        const d = await limiter.consume(key);
        if (d.reason === 'store-error') failed.push(key);
        if (d.allowed) admitted.set(key, admitted.get(key)! + 1);
      }
    };
    await admin(from!).config('RESETSTAT');
    const workers = Array.from({ length: 64 }, (_, w) => worker(w));
    const moved = await migrate(slot, from!, to!);
    running = false;
    await Promise.all(workers);
    // The source node's slot checks inside per-node batches turned calls away (their EXISTS,
    // rejected by the cluster's redirection), and those were decided alone.
    expect(await rejectedExists(from!)).toBeGreaterThan(0);
    expect(moved).toBeGreaterThan(0);
    expect(failed).toEqual([]);
    expect(Object.fromEntries(admitted)).toEqual(
      Object.fromEntries(keys.map((key) => [key, limit])),
    );
    // The counters agree: nothing charged twice, nothing lost.
    const counts = await Promise.all(keys.map((key) => limiter.peek(key)));
    expect(counts.map((d) => d.remaining)).toEqual(keys.map(() => 0));
  });
});
