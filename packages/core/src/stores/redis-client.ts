/**
 * The tiny client interface the Redis store needs — run a script by SHA1, or by text — and the
 * shims that adapt ioredis (Redis, Cluster) and node-redis (client, cluster) to it. Clusters
 * route both calls by the first key, so the EVAL fallback reaches the node that said NOSCRIPT.
 */
import { describeValue, RateLimitConfigError } from '../errors.js';

export interface ScriptClient {
  /** e.g. `ioredis Redis`, `node-redis cluster`. */
  readonly description: string;
  /** A cluster client: every call's keys must share a slot (batches are made per slot). */
  readonly cluster?: boolean;
  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /**
   * When present, runs a script in one call that handles NOSCRIPT itself; the store uses it
   * instead of evalsha/eval. Set for an ioredis Cluster with auto-pipelining (see below).
   */
  runScript?(
    script: { readonly sha1: string; readonly source: string },
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown>;
}

// biome-ignore lint/suspicious/noExplicitAny: the clients' own signatures are wider than any one call
type Fn = (...args: any[]) => Promise<unknown>;
interface IoredisLike {
  evalsha: Fn;
  eval: Fn;
  defineCommand: (name: string, definition: { numberOfKeys: number; lua: string }) => void;
  isCluster?: boolean;
  options?: { enableAutoPipelining?: boolean };
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
      const shim: ScriptClient = {
        description: client.isCluster ? 'ioredis Cluster' : 'ioredis Redis',
        cluster: client.isCluster === true,
        evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
        eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
      };
      if (client.isCluster && client.options?.enableAutoPipelining) {
        return { ...shim, runScript: definedCommandRunner(client) };
      }
      return shim;
    }
    if (isNodeRedis(client)) {
      return {
        description: client.masters !== undefined ? 'node-redis cluster' : 'node-redis client',
        cluster: client.masters !== undefined,
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

/**
 * ioredis Cluster auto-pipelining groups commands by the slot of their first argument, which for
 * EVALSHA is the SHA1, not a key: concurrent decisions on keys of different slots land in one
 * pipeline and fail ("All keys in the pipeline should belong to the same slots allocation
 * group"). A command made by `defineCommand` with a fixed key count starts with its first key,
 * so it is grouped by the right slot; ioredis then sends EVALSHA and falls back to EVAL on
 * NOSCRIPT itself. One command is defined per script and key count, named after both.
 */
function definedCommandRunner(client: IoredisLike): NonNullable<ScriptClient['runScript']> {
  const defined = new Set<string>();
  return (script, keys, args) => {
    const name = `floodgate_${script.sha1}_${keys.length}`;
    if (!defined.has(name)) {
      if (typeof (client as unknown as Record<string, unknown>)[name] !== 'function') {
        client.defineCommand(name, { numberOfKeys: keys.length, lua: script.source });
      }
      defined.add(name);
    }
    return (client as unknown as Record<string, Fn>)[name]!(...keys, ...args);
  };
}
