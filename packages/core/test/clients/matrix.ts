/**
 * The client matrix: every Redis client version the store supports (installed side by side
 * under npm aliases), in each protocol it speaks, connected to a standalone server or a local
 * cluster, so the same kits run through each one.
 */
import { GlideClient, GlideClusterClient, Logger, ProtocolVersion } from '@valkey/valkey-glide';
import * as ioredis5 from 'ioredis';
import * as ioredis6 from 'ioredis6';
import * as iovalkey from 'iovalkey';
import * as redis5 from 'redis';
import * as redis4 from 'redis4';
import * as redis6 from 'redis6';
import type { RedisClient } from '../../src/stores/redis-client.js';

// glide logs every error reply (NOSCRIPT included) to the console unless told not to.
Logger.setLoggerConfig('off');

export type Topology = 'standalone' | 'cluster';
export type Protocol = 'RESP2' | 'RESP3';

/** Where a client connects: one server, or the nodes of a cluster. */
export type Target =
  | { readonly topology: 'standalone'; readonly port: number }
  | {
      readonly topology: 'cluster';
      readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>;
    };

export interface MatrixClient {
  readonly client: RedisClient;
  /**
   * Empties the script cache and the function libraries on every primary, so the NOSCRIPT path
   * (and with `scripts: 'functions'`, the function-not-found path) is exercised.
   */
  flushScripts(): Promise<void>;
  close(): Promise<void>;
}

/** One cell of the compatibility table: a client, its major version and protocol. */
export interface MatrixRow {
  /** The npm package users install. */
  readonly client: 'ioredis' | 'redis' | 'iovalkey' | '@valkey/valkey-glide';
  readonly version: string;
  readonly protocol: Protocol;
  /** The client has a key prefix option (`keyPrefix`) that `connect` passes on. */
  readonly keyPrefix: boolean;
  /** Opens a connection with the client's own defaults (plus the protocol) on `target`. */
  connect(target: Target, options?: { keyPrefix?: string }): Promise<MatrixClient>;
}

/** `ioredis 6 RESP3`: the row's name in test titles and in docs/compatibility.md. */
export const rowName = (row: MatrixRow): string => `${row.client} ${row.version} ${row.protocol}`;

const host = '127.0.0.1';

/** ioredis and its fork iovalkey share one API (each with its own types): the part used here. */
interface IoredisModule {
  Redis: new (options: object) => IoredisConnection;
  Cluster: new (
    nodes: object[],
    options: object,
  ) => IoredisConnection & {
    nodes(role: 'master'): IoredisConnection[];
  };
}
interface IoredisConnection {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  ping(): Promise<unknown>;
  script(...args: string[]): Promise<unknown>;
  call(...args: string[]): Promise<unknown>;
  disconnect(): void;
}
function ioredisRow(
  client: MatrixRow['client'],
  version: string,
  module: object,
  protocol: Protocol,
): MatrixRow {
  const lib = module as IoredisModule;
  // ioredis 5 and iovalkey speak RESP2 only; ioredis 6 takes `protocol` (default 3).
  const extra = module === ioredis6 ? { protocol: protocol === 'RESP3' ? 3 : 2 } : {};
  return {
    client,
    version,
    protocol,
    keyPrefix: true,
    async connect(target, options = {}) {
      if (target.topology === 'standalone') {
        const redis = new lib.Redis({ host, port: target.port, ...extra, ...options });
        redis.on('error', () => undefined);
        await redis.ping();
        return {
          client: redis as unknown as RedisClient,
          flushScripts: async () => {
            await redis.script('FLUSH');
            await redis.call('FUNCTION', 'FLUSH');
          },
          close: async () => redis.disconnect(),
        };
      }
      const cluster = new lib.Cluster(
        target.nodes.map((n) => ({ host: n.host, port: n.port })),
        { redisOptions: { ...extra }, retryDelayOnFailover: 50, ...options },
      );
      cluster.on('error', () => undefined);
      await new Promise<void>((resolve, reject) => {
        cluster.once('ready', () => resolve());
        cluster.once('end', () => reject(new Error(`${client} ${version} Cluster ended`)));
      });
      return {
        client: cluster as unknown as RedisClient,
        flushScripts: async () => {
          await Promise.all(
            cluster.nodes('master').map(async (node) => {
              await node.script('FLUSH');
              await node.call('FUNCTION', 'FLUSH');
            }),
          );
        },
        close: async () => cluster.disconnect(),
      };
    },
  };
}

/** node-redis 4, 5 and 6 (each with its own types): the part used here. */
interface NodeRedisModule {
  createClient(options: object): NodeRedisConnection;
  createCluster(options: object): NodeRedisConnection & {
    masters: unknown[];
    nodeClient(master: unknown): Promise<NodeRedisConnection> | NodeRedisConnection;
  };
}
interface NodeRedisConnection {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  connect(): Promise<unknown>;
  sendCommand(args: string[]): Promise<unknown>;
  destroy?(): void;
  disconnect(): Promise<unknown>;
}
/** v5 and v6 `destroy()` at once; v4 has only `disconnect()`. */
async function closeNodeRedis(client: NodeRedisConnection): Promise<void> {
  if (client.destroy) {
    client.destroy();
    return;
  }
  try {
    await client.disconnect();
  } catch (error) {
    // node-redis 4's disconnect() can throw a TypeError from flushing its queue when a command
    // in it was aborted (an abandoned decision's AbortSignal): the connection is closed anyway.
    if (!(error instanceof TypeError)) throw error;
  }
}

function nodeRedisRow(version: string, module: object, protocol: Protocol): MatrixRow {
  const lib = module as NodeRedisModule;
  // node-redis 4 speaks RESP2 only; 5 and 6 take `RESP: 2 | 3`.
  const resp = module === redis4 ? {} : { RESP: protocol === 'RESP3' ? 3 : 2 };
  return {
    client: 'redis',
    version,
    protocol,
    // node-redis has a `keyPrefix` from v6 on.
    keyPrefix: module === redis6,
    async connect(target, options = {}) {
      if (target.topology === 'standalone') {
        const client = lib.createClient({
          url: `redis://${host}:${target.port}`,
          ...resp,
          ...options,
        });
        client.on('error', () => undefined);
        await client.connect();
        return {
          client: client as unknown as RedisClient,
          flushScripts: async () => {
            await client.sendCommand(['SCRIPT', 'FLUSH']);
            await client.sendCommand(['FUNCTION', 'FLUSH']);
          },
          close: () => closeNodeRedis(client),
        };
      }
      const cluster = lib.createCluster({
        rootNodes: target.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
        defaults: { socket: { connectTimeout: 1000, reconnectStrategy: 100 }, ...resp },
        ...resp,
        ...options,
      });
      cluster.on('error', () => undefined);
      await cluster.connect();
      return {
        client: cluster as unknown as RedisClient,
        flushScripts: async () => {
          for (const master of cluster.masters) {
            const node = await cluster.nodeClient(master);
            await node.sendCommand(['SCRIPT', 'FLUSH']);
            await node.sendCommand(['FUNCTION', 'FLUSH']);
          }
        },
        close: () => closeNodeRedis(cluster),
      };
    },
  };
}

function glideRow(version: string, protocol: Protocol): MatrixRow {
  const config = {
    protocol: protocol === 'RESP3' ? ProtocolVersion.RESP3 : ProtocolVersion.RESP2,
    requestTimeout: 2000,
  };
  return {
    client: '@valkey/valkey-glide',
    version,
    protocol,
    keyPrefix: false,
    async connect(target) {
      if (target.topology === 'standalone') {
        const glide = await GlideClient.createClient({
          addresses: [{ host, port: target.port }],
          ...config,
        });
        return {
          client: glide,
          flushScripts: async () => {
            await glide.customCommand(['SCRIPT', 'FLUSH']);
            await glide.customCommand(['FUNCTION', 'FLUSH']);
          },
          close: async () => glide.close(),
        };
      }
      const glide = await GlideClusterClient.createClient({
        addresses: target.nodes.map((n) => ({ host: n.host, port: n.port })),
        ...config,
      });
      return {
        client: glide,
        flushScripts: async () => {
          await glide.customCommand(['SCRIPT', 'FLUSH'], { route: 'allPrimaries' });
          await glide.customCommand(['FUNCTION', 'FLUSH'], { route: 'allPrimaries' });
        },
        close: async () => glide.close(),
      };
    },
  };
}

/** Every client version and protocol the project is proven on (docs/compatibility.md). */
export const MATRIX: readonly MatrixRow[] = [
  ioredisRow('ioredis', '5', ioredis5, 'RESP2'),
  ioredisRow('ioredis', '6', ioredis6, 'RESP2'),
  ioredisRow('ioredis', '6', ioredis6, 'RESP3'),
  nodeRedisRow('4', redis4, 'RESP2'),
  nodeRedisRow('5', redis5, 'RESP2'),
  nodeRedisRow('5', redis5, 'RESP3'),
  nodeRedisRow('6', redis6, 'RESP2'),
  nodeRedisRow('6', redis6, 'RESP3'),
  ioredisRow('iovalkey', '0.4', iovalkey, 'RESP2'),
  glideRow('2', 'RESP2'),
  glideRow('2', 'RESP3'),
];
