/**
 * The tiny client interface the Redis store needs — run a script by SHA1, or by text — and the
 * shims that adapt ioredis (Redis, Cluster) and node-redis (client, cluster) to it. Clusters
 * route both calls by the first key, so the EVAL fallback reaches the node that said NOSCRIPT.
 */
import { describeValue, RateLimitConfigError } from '../errors.js';

export interface ScriptClient {
  /** e.g. `ioredis Redis`, `node-redis cluster`. */
  readonly description: string;
  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
}

// biome-ignore lint/suspicious/noExplicitAny: the clients' own signatures are wider than any one call
type Fn = (...args: any[]) => Promise<unknown>;
interface IoredisLike {
  evalsha: Fn;
  eval: Fn;
  defineCommand: unknown;
  isCluster?: boolean;
}
interface NodeRedisLike {
  evalSha: Fn;
  eval: Fn;
  masters?: unknown;
}

function isIoredis(client: object): client is IoredisLike {
  const c = client as Partial<IoredisLike>;
  return (
    typeof c.evalsha === 'function' &&
    typeof c.eval === 'function' &&
    typeof c.defineCommand === 'function'
  );
}

function isNodeRedis(client: object): client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike>;
  return typeof c.evalSha === 'function' && typeof c.eval === 'function';
}

/** Adapts a supported Redis client, or throws RateLimitConfigError naming what it received. */
export function toScriptClient(client: unknown, field = 'redisStore.client'): ScriptClient {
  if (client !== null && typeof client === 'object') {
    if (isIoredis(client)) {
      return {
        description: client.isCluster ? 'ioredis Cluster' : 'ioredis Redis',
        evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
        eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
      };
    }
    if (isNodeRedis(client)) {
      return {
        description: client.masters !== undefined ? 'node-redis cluster' : 'node-redis client',
        evalsha: (sha1, keys, args) => client.evalSha(sha1, { keys, arguments: args }),
        eval: (script, keys, args) => client.eval(script, { keys, arguments: args }),
      };
    }
  }
  throw new RateLimitConfigError(
    'FLOODGATE_UNKNOWN_CLIENT',
    field,
    client,
    `${field} must be an ioredis Redis or Cluster, or a node-redis client or cluster (v4+), got ${describeValue(client)}`,
  );
}
