/**
 * Changes of the override for every key (`setLimit('*')`, `clearLimit('*')`) made at once by
 * limiters on different connections, as different processes make them: each change is a
 * compare-and-set of the one record (lua/global/change.lua), so changes of different policies
 * both land, a clear and a change land one after the other, and the record's version goes up
 * with every round. On a standalone Redis and on a real local Redis Cluster.
 */
import { Cluster, Redis } from 'ioredis';
import { startRedisCluster } from '../../../../test/harness/cluster';
import { connectIoredis, useTestRedis } from '../../../../test/harness/redis';
import { fixedWindow, gcra, RateLimiter, redisStore } from '../../src/index';
import { limitsId } from '../../src/policy';

jest.setTimeout(60_000);

const policies = () => [
  fixedWindow({ limit: 10, window: '1h', name: 'q' }),
  gcra({ limit: 100, window: '1h', name: 'g' }),
];

interface Clients {
  /** Two connections, as two processes have. */
  readonly a: Redis | Cluster;
  readonly b: Redis | Cluster;
}

/** The record's version, as stored ('' for none). */
async function version(client: Redis | Cluster, prefix: string): Promise<bigint> {
  const record = await client.get(`${prefix}:${limitsId(policies())}:global`);
  return record === null ? 0n : BigInt(record.split('|')[0]!);
}

/** The parameters a process that reads the record now decides with (a limiter of its own). */
async function limitsNow(client: Redis | Cluster, prefix: string) {
  const reader = new RateLimiter({
    store: redisStore({ client }),
    policies: policies(),
    prefix,
    liveLimits: true,
  });
  try {
    const limits = await reader.getLimit('*');
    return {
      q: limits.q!.overridden && limits.q!.limit,
      g: limits.g!.overridden && limits.g!.limit,
    };
  } finally {
    await reader.close();
  }
}

async function changeAtOnce({ a, b }: Clients, prefix: string): Promise<void> {
  const limiter = (client: Redis | Cluster) =>
    new RateLimiter({
      store: redisStore({ client }),
      policies: policies(),
      prefix,
      liveLimits: true,
    });
  const first = limiter(a);
  const second = limiter(b);
  let last = 0n;
  try {
    for (let round = 1; round <= 60; round++) {
      const clears = round % 6 === 0;
      await Promise.all([
        first.setLimit('*', { policy: 'q', limit: 1000 + round }),
        clears
          ? second.clearLimit('*')
          : second.setLimit('*', { policy: 'g', limit: 2000 + round }, { ttl: '1h' }),
      ]);
      const held = await limitsNow(a, prefix);
      if (clears) {
        // Either order, never a mix: set then cleared, or cleared then set.
        expect([
          { q: false, g: false },
          { q: 1000 + round, g: false },
        ]).toContainEqual(held);
      } else {
        expect(held).toEqual({ q: 1000 + round, g: 2000 + round });
      }
      const now = await version(b, prefix);
      expect(now).toBeGreaterThan(last);
      last = now;
    }
  } finally {
    await first.close();
    await second.close();
  }
}

describe('on one Redis, two connections', () => {
  const testRedis = useTestRedis();
  it('changing different policies for every key at once, round after round: no change is lost', async () => {
    const other = connectIoredis();
    try {
      await changeAtOnce({ a: testRedis(), b: other }, 'cas');
    } finally {
      await other.quit();
    }
  });
});

describe('on a Redis Cluster, two cluster clients', () => {
  let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('changing different policies for every key at once, round after round: no change is lost', async () => {
    const connect = () =>
      new Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })));
    const a = connect();
    const b = connect();
    try {
      await changeAtOnce({ a, b }, 'cas-cluster');
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });
});
