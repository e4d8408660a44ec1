/**
 * The options of `redisStore`, and the readers of the ones that need more than a type check.
 */
import type { Clock } from '../clock.js';
import { type Duration, parseDuration } from '../duration.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BatchLimits, DEFAULT_BATCH_LIMITS } from './redis-batch.js';
import type { RedisClient } from './redis-client.js';

/** Which clock times decisions: the store's `TIME` (read inside the scripts), or the app server's. */
export type TimeSource = 'redis' | 'client';

/** @default 1 s: how far the app server's clock may be from the store's with `time: 'client'`. */
export const DEFAULT_MAX_CLOCK_SKEW_MS = 1_000;

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
   *
   * `'node'` (an ioredis or iovalkey Cluster): a batch holds the decisions bound for one master,
   * whatever their slots (default bounds). Redis refuses a command whose declared keys span
   * slots, so the script declares one key and reaches the others from its arguments, which Redis
   * allows a script without a `#!lua` line on the keys of the node it runs on; a server or proxy
   * that refuses undeclared keys (a `#!lua` rule, some managed services and proxies) fails those
   * decisions, so keep the default there. Before deciding a slot's calls the script checks that
   * the node still holds their keys; calls of a slot that moved or is migrating are not run and
   * go again alone through the cluster client, so each decision is made once
   * (docs/reliability.md "Per-node batches"). On a single Redis it is the same as `true`.
   * @default true (128 decisions, 64 KiB); false on a cluster client
   */
  batch?: boolean | 'node' | { maxDecisions?: number; maxBytes?: number };
  /**
   * Which clock times decisions. `'redis'`: the store's `TIME`, read inside each script (one
   * clock for every app server); the store checks it before its first decision and every
   * minute, and refuses to decide (a store error the failure policy never answers by admitting)
   * while it answers 0, a time before 2020, or goes backwards. `'client'`: this server's
   * `Date.now()`, for servers whose scripts cannot read the time (Dragonfly answers 0); the
   * store refuses while this clock is more than `maxClockSkew` away from the store's `TIME`.
   * @default 'redis'
   */
  time?: TimeSource;
  /**
   * With `time: 'client'`: how far this server's clock may be from the store's `TIME`.
   * @default '1s'
   */
  maxClockSkew?: Duration;
  /**
   * How the store runs its scripts. `'evalsha'`: EVALSHA, and EVAL (which caches the script)
   * when a node answers NOSCRIPT. `'functions'`: each script is a Redis Function (Redis 7.0+,
   * Valkey), loaded with FUNCTION LOAD on every primary the first time it is needed there and
   * called with FCALL, for servers or proxies that answer NOSCRIPT intermittently. Needs the
   * FUNCTION and FCALL commands (ACL `+@scripting`); docs/reliability.md says when to choose it
   * and how to remove the libraries.
   * @default 'evalsha'
   */
  scripts?: ScriptMode;
}

/** How the Redis store runs its scripts: EVALSHA (the default) or Redis Functions (FCALL). */
export type ScriptMode = 'evalsha' | 'functions';

/** Reads `scripts`. */
export function readScripts(value: unknown): ScriptMode {
  if (value === undefined) return 'evalsha';
  if (value !== 'evalsha' && value !== 'functions') {
    throw configError('redisStore.scripts', value, "'evalsha' or 'functions'");
  }
  return value;
}

/** Every option name of RedisStoreOptions, checked against the type. */
export const REDIS_STORE_OPTION_NAMES = optionNames<RedisStoreOptions>({
  client: true,
  clock: true,
  batch: true,
  time: true,
  maxClockSkew: true,
  scripts: true,
});

/** Reads `time` and `maxClockSkew` (which only `time: 'client'` uses; neither with `clock`). */
export function readTime(
  time: unknown,
  maxClockSkew: unknown,
  clock: unknown,
): { source: TimeSource; maxSkewMs: number } {
  if (time !== undefined && time !== 'redis' && time !== 'client') {
    throw configError('redisStore.time', time, "'redis' or 'client'");
  }
  if (time === 'client' && clock !== undefined) {
    throw configError(
      'redisStore.time',
      time,
      "'redis' (or no time option) with an injected clock",
    );
  }
  if (maxClockSkew !== undefined && time !== 'client') {
    throw configError('redisStore.maxClockSkew', maxClockSkew, "no value unless time is 'client'");
  }
  const maxSkewMs =
    maxClockSkew === undefined
      ? DEFAULT_MAX_CLOCK_SKEW_MS
      : parseDuration(maxClockSkew, 'redisStore.maxClockSkew') / 1000;
  return { source: time ?? 'redis', maxSkewMs };
}

/** `batch: 'node'` on a cluster: the default bounds, per master. */
const PER_NODE_BATCH_LIMITS: BatchLimits = Object.freeze({
  ...DEFAULT_BATCH_LIMITS,
  perNode: true,
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
  if (value === 'node') return cluster ? PER_NODE_BATCH_LIMITS : DEFAULT_BATCH_LIMITS;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError(
      'redisStore.batch',
      value,
      "true, false, 'node' or { maxDecisions?, maxBytes? }",
    );
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
