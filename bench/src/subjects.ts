/**
 * The things measured: our RateLimiter and the peers, each reduced to "decide for this key".
 * Limits are set high so that the measured path is the common one, an admitted request.
 */
import {
  fixedWindow,
  gcra,
  memoryStore,
  type Policy,
  RateLimiter,
  redisStore,
} from '@floodgate/core';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { MemoryStore as ErlMemoryStore } from 'express-rate-limit';
import type { Cluster, Redis } from 'ioredis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import rlf from 'rate-limiter-flexible';
import type { Operation } from './measure.js';

export interface Subject {
  readonly name: string;
  readonly op: Operation;
}

/**
 * High enough that nothing is denied during a run (a few requests per key per window), and
 * a limit users really set: fixedWindow keeps it in its one-integer layout (limit < window in µs).
 */
export const NEVER_DENY = 10_000_000;

export const onePolicy = (): Policy => fixedWindow({ limit: NEVER_DENY, window: '1m' });
export const threePolicies = (): Policy[] => [
  fixedWindow({ limit: NEVER_DENY, window: '1m' }),
  fixedWindow({ limit: NEVER_DENY, window: '1h' }),
  gcra({ limit: NEVER_DENY, window: '1h' }),
];

/**
 * Our three limiters on one store: 1 fixedWindow, 1 gcra, 3 policies (`tag` keeps the keys of
 * two sets of them apart on one Redis).
 */
export function floodgateSubjects(
  client: Redis | Cluster,
  batch: boolean | 'node',
  tag = '',
): Subject[] {
  const store = redisStore({ client, batch });
  const fg1 = new RateLimiter({ store, policies: onePolicy(), prefix: `fg1${tag}` });
  const fgGcra = new RateLimiter({
    store,
    policies: gcra({ limit: NEVER_DENY, window: '1h' }),
    prefix: `fgg${tag}`,
  });
  const fg3 = new RateLimiter({ store, policies: threePolicies(), prefix: `fg3${tag}` });
  const suffix = batch === 'node' ? " (batch: 'node')" : batch ? '' : ' (batch: false)';
  return [
    { name: `floodgate fixedWindow${suffix}`, op: (key) => fg1.consume(key) },
    { name: `floodgate gcra${suffix}`, op: (key) => fgGcra.consume(key) },
    { name: `floodgate 3 policies${suffix}`, op: (key) => fg3.consume(key) },
  ];
}

/**
 * Every Redis-backed subject, on one ioredis client: ours batched (the default) and with
 * `batch: false` (one EVALSHA per decision, as before batching), side by side.
 */
export async function redisSubjects(client: Redis): Promise<Subject[]> {
  const flexible = new rlf.RateLimiterRedis({
    storeClient: client,
    points: NEVER_DENY,
    duration: 60,
    keyPrefix: 'rlf',
  });
  const rlr = new RateLimitRedisStore({
    sendCommand: (command: string, ...args: string[]) =>
      client.call(command, ...args) as Promise<never>,
    prefix: 'rlr:',
  });
  rlr.init({ windowMs: 60_000 } as never);
  const nest = new ThrottlerStorageRedisService(client);
  return [
    { name: 'ioredis INCR', op: (key) => client.incr(`incr:${key}`) },
    ...floodgateSubjects(client, true),
    ...floodgateSubjects(client, false),
    { name: 'rate-limiter-flexible', op: (key) => flexible.consume(key) },
    { name: 'rate-limit-redis', op: (key) => rlr.increment(key) },
    {
      name: '@nest-lab/throttler-storage-redis',
      op: (key) => nest.increment(key, 60_000, NEVER_DENY, 60_000, 'default'),
    },
  ];
}

/** In-process stores. */
export function memorySubjects(): Subject[] {
  const fgFixed = new RateLimiter({ store: memoryStore(), policies: onePolicy() });
  const fgGcra = new RateLimiter({
    store: memoryStore(),
    policies: gcra({ limit: NEVER_DENY, window: '1h' }),
  });
  const fg3 = new RateLimiter({ store: memoryStore(), policies: threePolicies() });
  const flexible = new rlf.RateLimiterMemory({ points: NEVER_DENY, duration: 60 });
  const erl = new ErlMemoryStore();
  erl.init({ windowMs: 60_000 } as never);
  return [
    { name: 'floodgate fixedWindow', op: (key) => fgFixed.consume(key) },
    { name: 'floodgate gcra', op: (key) => fgGcra.consume(key) },
    { name: 'floodgate 3 policies', op: (key) => fg3.consume(key) },
    { name: 'RateLimiterMemory', op: (key) => flexible.consume(key) },
    { name: 'express-rate-limit MemoryStore', op: (key) => erl.increment(key) },
  ];
}
