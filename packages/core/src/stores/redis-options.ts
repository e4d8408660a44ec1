/**
 * The options of `redisStore`, and the readers of the ones that need more than a type check.
 */
import type { Clock } from '../clock.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BatchLimits, DEFAULT_BATCH_LIMITS } from './redis-batch.js';
import type { RedisClient } from './redis-client.js';

export interface RedisStoreOptions {
  /**
   * An ioredis (v5, v6) or iovalkey `Redis` (also with `sentinels`) or `Cluster`, a node-redis
   * client, cluster (v4+) or sentinel (`createSentinel`, v5+), or a valkey-glide `GlideClient`
   * or `GlideClusterClient`; RESP2 or RESP3 (docs/compatibility.md). A `keyPrefix` set on the
   * client goes before every key, and must not hold `{` or `}`.
   */
  client: RedisClient;
  /**
   * Epoch milliseconds (fractions allowed). Without it the script reads Redis `TIME`, one clock
   * for every app server; inject one only for tests and simulations.
   */
  clock?: Clock;
  /**
   * Decisions bound for the same Redis node (cluster: the same slot) go out together as one
   * script call that decides them in order, exactly as single calls would (one Redis TIME for
   * all), up to three such calls in flight. A lone decision is never delayed. `false` sends
   * one EVALSHA per decision; an object bounds a batch (`maxDecisions` calls, `maxBytes`
   * characters of keys and arguments). Works the same on every client: the store sends its
   * commands itself, never through ioredis auto-pipelining. On a Redis Cluster client it is off
   * unless given: a batch must stay within one slot, and with callers spread over 16 384 slots
   * nearly every batch held one decision and the batcher cost more than it saved (measured:
   * docs/benchmarks.md "Redis Cluster"); `true` turns it on there for a few hot keys.
   * @default true (128 decisions, 64 KiB); false on a cluster client
   */
  batch?: boolean | { maxDecisions?: number; maxBytes?: number };
}

/** Every option name of RedisStoreOptions, checked against the type. */
export const REDIS_STORE_OPTION_NAMES = optionNames<RedisStoreOptions>({
  client: true,
  clock: true,
  batch: true,
});

/** Every option name of `batch` as an object, checked against the type. */
const BATCH_OPTION_NAMES = optionNames<Exclude<RedisStoreOptions['batch'], boolean | undefined>>({
  maxDecisions: true,
  maxBytes: true,
});

/**
 * Reads `batch`: the batch bounds, or undefined with `batch: false` (and, on a cluster client,
 * when `batch` is not given).
 */
export function readBatch(value: unknown, cluster = false): BatchLimits | undefined {
  if (value === undefined) return cluster ? undefined : DEFAULT_BATCH_LIMITS;
  if (value === true) return DEFAULT_BATCH_LIMITS;
  if (value === false) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError('redisStore.batch', value, 'true, false or { maxDecisions?, maxBytes? }');
  }
  const o = readOptions(value, 'redisStore.batch', BATCH_OPTION_NAMES);
  return Object.freeze({
    maxDecisions:
      o.maxDecisions === undefined
        ? DEFAULT_BATCH_LIMITS.maxDecisions
        : positiveInteger(o.maxDecisions, 'redisStore.batch.maxDecisions'),
    maxBytes:
      o.maxBytes === undefined
        ? DEFAULT_BATCH_LIMITS.maxBytes
        : positiveInteger(o.maxBytes, 'redisStore.batch.maxBytes'),
  });
}
