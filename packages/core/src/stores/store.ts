/**
 * The seam between the limiter and where state lives. A store prepares a limiter's policies
 * once (encoding what never changes) and then answers one decision per call.
 */
import type { StoreDecision } from '../decision.js';
import type { GlobalLimits } from '../live-global.js';
import type { LimitChange } from '../live-limits.js';
import type { Policy } from '../policy.js';
import type { LeaseTaken } from './lease-take.js';

/** What a limiter asks of `Store.prepare` besides its policies. */
export interface PrepareOptions {
  /** `'per-policy'`: keep one key per policy, never one key for all (RateLimiterOptions). */
  readonly stateKeys?: 'per-caller' | 'per-policy';
  /**
   * The limiter has live limits: every call's keys end with the key's overrides
   * (`<prefix>:{<key>}:lm<digest>`), read in the same store call (live-limits.ts).
   */
  readonly liveLimits?: boolean;
  /**
   * With `liveLimits`: the key of the limiter's override for every key (`setLimit('*')`),
   * `<prefix>:lm<digest>:global`, outside every caller's hash tag (live-global.ts).
   */
  readonly globalKey?: string;
}

export interface Store {
  /** `memory` or `redis`; shown in errors and used by adapters. */
  readonly kind: string;
  /**
   * Validates and prepares a limiter's policies; called once per limiter. `options.stateKeys`
   * is the limiter's `stateKeys` (stores with one layout ignore it).
   */
  prepare(policies: readonly Policy[], options?: PrepareOptions): PreparedPolicies;
  /**
   * The leases of ConcurrencyLimiter on this store (one table per store, shared by every
   * limiter on it). Stores without it cannot hold leases.
   */
  leases?(): StoreLeases;
  /**
   * Stores that share this object share one circuit breaker (store-guard.ts): every limiter on
   * one Redis connection stops asking it together. @default the store itself
   */
  readonly connection?: object;
}

/** A lease table's answer to `acquire`, in integer microseconds. */
export interface LeaseAnswer {
  readonly allowed: boolean;
  /** Leases that could still be taken after this one. */
  readonly remaining: number;
  /** Until every held lease has expired. */
  readonly resetAfter: number;
  /** 0 when allowed; until the earliest lease whose expiry frees a slot expires. */
  readonly retryAfter: number;
  /** The table was full of live keys (memory store `maxKeys`). */
  readonly full?: boolean;
}

/** Expiring leases per key (nginx `limit_conn`); mirrors lua/leases/. */
export interface StoreLeases {
  /** True when the table lives in this process: no I/O to bound with a timeout. */
  readonly local: boolean;
  /** Takes a lease `id` for `ttl` µs when fewer than `limit` unexpired leases are held. */
  acquire(key: string, limit: number, ttl: number, id: string): Promise<LeaseAnswer>;
  /** Frees `id`; true when it still held a slot (had not expired). */
  release(key: string, id: string): Promise<boolean>;
  /** Extends an unexpired lease to now + ttl; false when it had expired or was released. */
  renew(key: string, ttl: number, id: string): Promise<boolean>;
  /** Drops every lease of `key`. */
  reset(key: string): Promise<void>;
}

/**
 * Every method takes `keys`: `keys[i]` is policy i's storage key and the last one, `keys[n]`,
 * the key's block state (lockouts and blocks by hand), all in one hash tag; with `combined`,
 * `keys[0]` holds every policy's state and `keys[1]` is the block state.
 */
export interface PreparedPolicies {
  /**
   * The store keeps every policy's state in one key per caller (redisStore, for the policies
   * keys.ts `sharesOneKey` accepts), so the limiter passes two keys (keys.ts `keyTails`).
   */
  readonly combined?: boolean;
  /**
   * Decides a request of `cost` against every policy at once: all are charged or none. With
   * `peek`, nothing is written. A blocked key is denied without reading or charging anything;
   * a consume denied by a policy with a lockout blocks the key (and clears that policy).
   */
  decide(keys: readonly string[], cost: number, peek: boolean): Promise<StoreDecision>;
  /**
   * The same decision answered synchronously, for stores that live in this process (memory):
   * the limiter then skips the timeout and circuit breaker, which only I/O needs. If it throws,
   * the limiter retries through `decide` so the failure policy answers. `slots` (one per key,
   * kept by the limiter for each recent key) is the store's to fill: what it remembers there
   * about a key may save it work on the key's next decision.
   */
  decideNow?(
    keys: readonly string[],
    cost: number,
    peek: boolean,
    slots?: unknown[],
  ): StoreDecision;
  /**
   * Like a consuming `decide`, but smooth policies also admit a request whose next-free time is
   * at most `slack` µs away, charging it now and answering the wait as `delay` (Guava
   * `tryAcquire(timeout)`; `limiter.acquire` uses it). Stores without it: acquire retries.
   */
  reserve?(keys: readonly string[], cost: number, slack: number): Promise<StoreDecision>;
  /** Deletes the state behind `keys`, blocks included. */
  reset(keys: readonly string[]): Promise<void>;
  /**
   * Deletes the state of every key of this limiter: every storage key that starts with `head`
   * (`<prefix>:{`) and ends in one of `tails` (keys.ts `keyTails`), blocks included. Answers
   * how many storage keys were deleted. Stores without it cannot `resetAll`. With live limits:
   * the keys' overrides and marks, and the limiter's override for every key (`globalKey`).
   */
  resetAll?(head: string, tails: readonly string[]): Promise<number>;
  /**
   * Gives back up to `cost` units to every policy (per algorithm: docs/algorithms.md) and
   * answers a read (cost 0) of the key as it then stands, in the same atomic step.
   */
  refund(keys: readonly string[], cost: number): Promise<StoreDecision>;
  /**
   * Charges `cost` units to every policy even past its limit (debt, per algorithm:
   * docs/algorithms.md#debt), whatever blocks the key, and answers a peek of cost 1 of the key
   * as it then stands, in the same atomic step (`penalize`, a settle's overrun).
   */
  charge?(keys: readonly string[], cost: number): Promise<StoreDecision>;
  /**
   * Forgets every policy's state, then charges `used` units as `charge` does, and answers a
   * peek of cost 1 of the key as it then stands, in the same atomic step (`limiter.set`). The
   * key's block state is kept.
   */
  set?(keys: readonly string[], used: number): Promise<StoreDecision>;
  /**
   * Lease take (a quota lease, docs/algorithms.md#quota-leases): charges every policy the same
   * number of units, the least room any of them has now and at most `want`, in one atomic step
   * (all-or-nothing; a blocked key grants nothing). Stores without it cannot lease.
   */
  take?(keys: readonly string[], want: number): Promise<LeaseTaken>;
  /** Blocks the key by hand for `micros` µs, or for ever when 0. */
  block(keys: readonly string[], micros: number): Promise<void>;
  /** Lifts a block (by hand or lockout) and forgets the lockouts in a row. */
  unblock(keys: readonly string[]): Promise<void>;
  /**
   * Live limits (prepared with `liveLimits`): replaces the key's overrides of the change's
   * policies (or, with no entries, drops them all) and rewrites those policies' states as its
   * carry says, in one atomic step. Stores without it cannot hold live limits.
   */
  changeLimits?(keys: readonly string[], change: LimitChange): Promise<void>;
  /**
   * Live limits for every key (prepared with `globalKey`): replaces the override for every key
   * (no entries: clears it). Each key is carried to it lazily, on its next call; every process
   * holds it within GLOBAL_BOUND_MS of this resolving.
   */
  changeGlobal?(change: LimitChange): Promise<void>;
  /**
   * The override for every key as this process holds it (read from the store first if need be),
   * while it is in force: none once cleared or lapsed (the decisions' own parameters then).
   */
  readGlobal?(): Promise<GlobalLimits | undefined>;
  /** Stops what keeps the override for every key current (a subscriber, a poll). */
  closeLive?(): void;
}
