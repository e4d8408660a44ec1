/**
 * Leases on Redis: lua/leases/ run through the store's own script runner, so the lease path
 * gets every client shim the decisions get (EVALSHA with the NOSCRIPT fallback, the ioredis
 * Cluster auto-pipelining command) and the limiter's StoreGuard bounds each call.
 */
import { readMicros } from '../clock.js';
import { RateLimitStoreError } from '../errors.js';
import {
  LEASE_ACQUIRE_SCRIPT,
  LEASE_RELEASE_SCRIPT,
  LEASE_RENEW_SCRIPT,
  LEASE_RESET_SCRIPT,
  type LeaseScript,
} from '../generated/scripts.js';
import type { RedisStore } from './redis.js';
import type { StoreLeases } from './store.js';

export function redisLeases(store: RedisStore): StoreLeases {
  const clock = store.clock;
  // The prelude's ARGV: mode, now ('' = Redis TIME), cost, TTL pad.
  const head = (): string[] => ['0', clock ? String(readMicros(clock)) : '', '1', store.ttlSlack];
  const run = async (script: LeaseScript, key: string, args: string[]): Promise<unknown> => {
    try {
      return await store.runScript(script, [key], [...head(), ...args]);
    } catch (error) {
      throw new RateLimitStoreError(
        `${store.client.description} failed running the ${script.name} script: ${(error as Error)?.message ?? error}`,
        { cause: error },
      );
    }
  };
  return {
    local: false,
    acquire: async (key, limit, ttl, id) => {
      const reply = await run(LEASE_ACQUIRE_SCRIPT, key, [String(limit), String(ttl), id]);
      if (!Array.isArray(reply) || reply.length !== 4) {
        throw new RateLimitStoreError(
          `unexpected reply from lease-acquire: ${JSON.stringify(reply)}`,
        );
      }
      const [allowed, remaining, resetAfter, retryAfter] = reply.map(Number);
      return {
        allowed: allowed === 1,
        remaining: remaining!,
        resetAfter: resetAfter!,
        retryAfter: retryAfter!,
      };
    },
    release: async (key, id) => (await run(LEASE_RELEASE_SCRIPT, key, [id])) === 1,
    renew: async (key, ttl, id) => (await run(LEASE_RENEW_SCRIPT, key, [String(ttl), id])) === 1,
    reset: async (key) => {
      await run(LEASE_RESET_SCRIPT, key, []);
    },
  };
}
