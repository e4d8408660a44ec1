/**
 * Every supported Redis client, connected to the harness Redis or to a local cluster, so the
 * same scenarios run through each shim of the core's client interface.
 */
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { testRedisUrl, workerDb } from '../../../../test/harness/redis.js';
import type { RedisClient } from '../../src/stores/redis-client.js';

export interface ConnectedClient {
  readonly label: string;
  /** What redisStore({ client }) receives. */
  readonly client: RedisClient;
  /** Empties the script cache on every node, so the NOSCRIPT path is exercised. */
  flushScripts(): Promise<void>;
  close(): Promise<void>;
}

export type ClientKind =
  | 'ioredis Redis'
  | 'ioredis Redis (auto-pipelining)'
  | 'node-redis client'
  | 'ioredis Cluster'
  | 'ioredis Cluster (auto-pipelining)'
  | 'node-redis cluster';

export const STANDALONE_KINDS: readonly ClientKind[] = [
  'ioredis Redis',
  'ioredis Redis (auto-pipelining)',
  'node-redis client',
];
export const CLUSTER_KINDS: readonly ClientKind[] = [
  'ioredis Cluster',
  'ioredis Cluster (auto-pipelining)',
  'node-redis cluster',
];

/** A standalone client on the harness Redis (this worker's database). */
export async function connectStandalone(kind: ClientKind): Promise<ConnectedClient> {
  if (kind === 'node-redis client') {
    const client = createClient({ url: testRedisUrl(), database: workerDb() });
    client.on('error', () => undefined);
    await client.connect();
    return {
      label: kind,
      client,
      flushScripts: async () => {
        await client.scriptFlush();
      },
      close: async () => {
        client.destroy();
      },
    };
  }
  const client = new Redis(testRedisUrl(), {
    db: workerDb(),
    enableAutoPipelining: kind.includes('auto-pipelining'),
  });
  return {
    label: kind,
    client,
    flushScripts: async () => {
      await client.script('FLUSH');
    },
    close: async () => {
      client.disconnect();
    },
  };
}

/** A cluster client on the nodes given. */
export async function connectCluster(
  kind: ClientKind,
  nodes: ReadonlyArray<{ host: string; port: number }>,
): Promise<ConnectedClient> {
  if (kind === 'node-redis cluster') {
    const cluster = createCluster({
      rootNodes: nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
      defaults: { socket: { connectTimeout: 1000, reconnectStrategy: 100 } },
    });
    cluster.on('error', () => undefined);
    await cluster.connect();
    return {
      label: kind,
      client: cluster,
      flushScripts: async () => {
        for (const master of cluster.masters) {
          const client = await cluster.nodeClient(master);
          await client.scriptFlush();
        }
      },
      close: async () => {
        cluster.destroy();
      },
    };
  }
  const cluster = new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    {
      enableAutoPipelining: kind.includes('auto-pipelining'),
      retryDelayOnFailover: 50,
      retryDelayOnClusterDown: 50,
      slotsRefreshTimeout: 1000,
    },
  );
  cluster.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    cluster.once('ready', () => resolve());
    cluster.once('end', () => reject(new Error('ioredis Cluster ended before ready')));
  });
  return {
    label: kind,
    client: cluster,
    flushScripts: async () => {
      await Promise.all(cluster.nodes('master').map((node) => node.script('FLUSH')));
    },
    close: async () => {
      cluster.disconnect();
    },
  };
}
