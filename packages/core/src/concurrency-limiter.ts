/**
 * ConcurrencyLimiter: nginx `limit_conn`, a semaphore per key. `acquire(key)` admits while fewer
 * than `limit` unexpired leases are held and hands out a lease; `release()` frees the slot.
 * Leases expire after `leaseTtl`, so a holder that crashed never leaks a slot; long work renews.
 * On Redis the leases are a sorted set scored by expiry (lua/leases/); the memory store keeps
 * the same structure in process, with the same answers.
 */
import { randomUUID } from 'node:crypto';
import { type Clock, readMicros } from './clock.js';
import type { Decision, PolicyDecision } from './decision.js';
import { type Duration, parseDuration } from './duration.js';
import { RateLimitStoreError } from './errors.js';
import {
  LEASE_ACQUIRE_SCRIPT,
  LEASE_RELEASE_SCRIPT,
  LEASE_RENEW_SCRIPT,
  LEASE_RESET_SCRIPT,
  type LeaseScript,
} from './generated/scripts.js';
import { encodeKey } from './keys.js';
import { configError, fieldPathOf, optionNames, positiveInteger, readOptions } from './options.js';
import { readCost } from './rate-limiter-options.js';
import { MemoryStore } from './stores/memory.js';
import { RedisStore } from './stores/redis.js';
import type { Store } from './stores/store.js';

export interface ConcurrencyLimiterOptions {
  /** `memoryStore()` or `redisStore({ client })`; its clock (if injected) is used. */
  store: Store;
  /** Leases held at once per key. */
  limit: number;
  /** How long a lease holds its slot unless released or renewed first. */
  leaseTtl: Duration;
  /** First part of every storage key. Must not contain `{` or `}`. @default 'rl' */
  prefix?: string;
}

/** A held slot. */
export interface Lease {
  /** Unique per acquire (a random UUID). */
  readonly id: string;
  /**
   * Frees the slot. Idempotent: resolves true when this call freed a slot the lease still
   * held, false when it was already released or had expired.
   */
  release(): Promise<boolean>;
  /**
   * Extends an unexpired lease to now + leaseTtl (for long work). Resolves false when the lease
   * had expired or was released: its slot may belong to someone else now, so it is not revived.
   */
  renew(): Promise<boolean>;
}

/** A Decision, plus the lease when admitted. */
export interface ConcurrencyDecision extends Decision {
  readonly lease?: Lease;
}

/** `acquire` takes no call options yet; any name given is a mistake and is reported. */
export type ConcurrencyAcquireOptions = Record<string, never>;

/** Where the leases live: the Redis scripts or the in-process table. */
interface LeaseBackend {
  /** [allowed, remaining, resetAfter µs, retryAfter µs, store full (memory: 1)?] */
  acquire(key: string, limit: number, ttl: number, id: string): Promise<number[]>;
  release(key: string, id: string): Promise<boolean>;
  renew(key: string, ttl: number, id: string): Promise<boolean>;
  reset(key: string): Promise<void>;
}

/** Every option name of ConcurrencyLimiterOptions, checked against the type. */
const CONCURRENCY_LIMITER_OPTION_NAMES = optionNames<ConcurrencyLimiterOptions>({
  store: true,
  limit: true,
  leaseTtl: true,
  prefix: true,
});

export class ConcurrencyLimiter {
  readonly store: Store;
  readonly limit: number;
  /** Lease time to live in milliseconds. */
  readonly leaseTtl: number;
  readonly prefix: string;
  /** Name used in decisions: `concurrency-<limit>`. */
  readonly name: string;
  private readonly leaseTtlUs: number;
  private readonly backend: LeaseBackend;

  constructor(options: ConcurrencyLimiterOptions) {
    const where = fieldPathOf(options, 'ConcurrencyLimiter');
    const o = readOptions(options, where, CONCURRENCY_LIMITER_OPTION_NAMES);
    const store = o.store;
    if (!(store instanceof MemoryStore) && !(store instanceof RedisStore)) {
      throw configError(
        `${where}.store`,
        store,
        'a store: memoryStore() or redisStore({ client })',
      );
    }
    this.store = store;
    this.limit = positiveInteger(o.limit, `${where}.limit`);
    this.leaseTtlUs = parseDuration(o.leaseTtl, `${where}.leaseTtl`);
    this.leaseTtl = this.leaseTtlUs / 1000;
    const prefix = o.prefix === undefined ? 'rl' : o.prefix;
    if (typeof prefix !== 'string' || prefix === '' || /[{}]/.test(prefix)) {
      throw configError(`${where}.prefix`, prefix, 'a non-empty string without "{" or "}"');
    }
    this.prefix = prefix;
    this.name = `concurrency-${this.limit}`;
    this.backend = store instanceof RedisStore ? redisLeases(store) : memoryLeases(store);
  }

  /**
   * Takes a slot for `key` if fewer than `limit` unexpired leases are held: the decision is
   * admitted and carries the lease. Otherwise it is denied, with `retryAfter` the time until
   * enough leases expire (a release may free a slot sooner). A denial writes nothing.
   */
  async acquire(key: string, options?: ConcurrencyAcquireOptions): Promise<ConcurrencyDecision> {
    readCost(options, []);
    const storageKey = this.storageKey(key);
    const id = randomUUID();
    const [allowed, remaining, resetAfter, retryAfter, full] = await this.backend.acquire(
      storageKey,
      this.limit,
      this.leaseTtlUs,
      id,
    );
    const view: PolicyDecision = {
      name: this.name,
      allowed: allowed === 1,
      limit: this.limit,
      quota: this.limit,
      remaining: remaining!,
      resetAfter: resetAfter! / 1000,
      retryAfter: retryAfter! / 1000,
      delay: 0,
      window: this.leaseTtl,
    };
    const { name, ...fields } = view;
    const decision: Decision = {
      ...fields,
      policy: name,
      policies: [view],
      ...(full === 1 ? { reason: 'store-full' as const } : {}),
    };
    if (!view.allowed) return decision;
    const backend = this.backend;
    const ttl = this.leaseTtlUs;
    const lease: Lease = {
      id,
      release: () => backend.release(storageKey, id),
      renew: () => backend.renew(storageKey, ttl, id),
    };
    return { ...decision, lease };
  }

  /** Drops every lease held for `key`. */
  reset(key: string): Promise<void> {
    return this.backend.reset(this.storageKey(key));
  }

  /** `<prefix>:{<key>}:leases` — limiters sharing a prefix share a key's slots. */
  storageKey(key: string): string {
    return `${this.prefix}:{${encodeKey(key)}}:leases`;
  }
}

function redisLeases(store: RedisStore): LeaseBackend {
  const client = store.client;
  const clock = store.clock;
  const head = (): string[] => ['0', clock ? String(readMicros(clock)) : '', '1', store.ttlSlack];
  const run = async (script: LeaseScript, key: string, args: string[]): Promise<unknown> => {
    try {
      try {
        return await client.evalsha(script.sha1, [key], args);
      } catch (error) {
        if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
        return await client.eval(script.source, [key], args);
      }
    } catch (error) {
      throw new RateLimitStoreError(
        `${client.description} failed running the ${script.name} script: ${(error as Error)?.message ?? error}`,
        { cause: error },
      );
    }
  };
  return {
    acquire: async (key, limit, ttl, id) => {
      const reply = await run(LEASE_ACQUIRE_SCRIPT, key, [
        ...head(),
        String(limit),
        String(ttl),
        id,
      ]);
      if (!Array.isArray(reply) || reply.length !== 4) {
        throw new RateLimitStoreError(
          `unexpected reply from lease-acquire: ${JSON.stringify(reply)}`,
        );
      }
      return reply.map(Number);
    },
    release: async (key, id) => (await run(LEASE_RELEASE_SCRIPT, key, [...head(), id])) === 1,
    renew: async (key, ttl, id) =>
      (await run(LEASE_RENEW_SCRIPT, key, [...head(), String(ttl), id])) === 1,
    reset: async (key) => {
      await run(LEASE_RESET_SCRIPT, key, head());
    },
  };
}

/** Lease tables of each memory store, shared by every ConcurrencyLimiter on that store. */
const memoryTables = new WeakMap<MemoryStore, Map<string, Map<string, number>>>();
/** How often expired leases are dropped from a memory store's lease table (ms). */
const LEASE_SWEEP_INTERVAL_MS = 60_000;

/** Drops expired leases, and keys left without any. */
function sweep(table: Map<string, Map<string, number>>, now: number): void {
  for (const [key, leases] of table) {
    for (const [id, expires] of leases) if (expires <= now) leases.delete(id);
    if (leases.size === 0) table.delete(key);
  }
}

function memoryLeases(store: MemoryStore): LeaseBackend {
  let table = memoryTables.get(store);
  if (table === undefined) {
    const created = new Map<string, Map<string, number>>();
    table = created;
    memoryTables.set(store, created);
    // One unref'd timer per store: keys whose leases all expired (crashed holders) go away.
    const sweeper = setInterval(
      () => sweep(created, readMicros(store.clock)),
      LEASE_SWEEP_INTERVAL_MS,
    );
    sweeper.unref();
  }
  const leasesOf = table;
  const clock: Clock = store.clock;
  return {
    // Mirrors lua/leases/acquire.lua.
    acquire: async (key, limit, ttl, id) => {
      const now = readMicros(clock);
      const leases = leasesOf.get(key);
      const live: number[] = [];
      let latest = now;
      if (leases !== undefined) {
        for (const expires of leases.values()) {
          if (expires > now) live.push(expires);
          latest = Math.max(latest, expires);
        }
      }
      const held = live.length;
      if (held < limit) {
        // Bounded like the store (`maxKeys`): drop keys whose leases all expired, else refuse.
        if (leases === undefined && leasesOf.size >= store.maxKeys) {
          sweep(leasesOf, now);
          if (leasesOf.size >= store.maxKeys) return [0, 0, 0, LEASE_SWEEP_INTERVAL_MS * 1000, 1];
        }
        const expires = now + ttl;
        const next = new Map<string, number>();
        if (leases !== undefined) for (const [i, e] of leases) if (e > now) next.set(i, e);
        next.set(id, expires);
        leasesOf.set(key, next);
        latest = Math.max(latest, expires);
        return [1, limit - held - 1, latest - now, 0];
      }
      live.sort((a, b) => a - b);
      return [0, 0, latest - now, live[held - limit]! - now];
    },
    // Mirrors lua/leases/release.lua.
    release: async (key, id) => {
      const leases = leasesOf.get(key);
      const expires = leases?.get(id);
      if (leases === undefined || expires === undefined) return false;
      leases.delete(id);
      if (leases.size === 0) leasesOf.delete(key);
      return expires > readMicros(clock);
    },
    // Mirrors lua/leases/renew.lua.
    renew: async (key, ttl, id) => {
      const expires = leasesOf.get(key)?.get(id);
      const now = readMicros(clock);
      if (expires === undefined || expires <= now) return false;
      leasesOf.get(key)!.set(id, now + ttl);
      return true;
    },
    reset: async (key) => {
      leasesOf.delete(key);
    },
  };
}
