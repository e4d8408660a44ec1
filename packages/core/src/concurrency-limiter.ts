/**
 * ConcurrencyLimiter: nginx `limit_conn`, a semaphore per key. `acquire(key)` admits while fewer
 * than `limit` unexpired leases are held and hands out a lease; `release()` frees the slot.
 * Leases expire after `leaseTtl`, so a holder that crashed never leaks a slot; long work renews.
 * Leases live behind the same Store seam as policies (`store.leases()`: lua/leases/ on Redis,
 * the memory store's own table in process) and every call goes through the same StoreGuard as
 * a RateLimiter's: timeout, the store's shared circuit breaker, and the failure policy.
 */
import { randomUUID } from 'node:crypto';
import type { Decision, PolicyDecision } from './decision.js';
import { type Duration, parseDuration } from './duration.js';
import { RateLimitArgumentError } from './errors.js';
import {
  type CallContext,
  type CircuitBreakerOptions,
  type FailureConfig,
  type RateLimiterHooks,
  readFailureOptions,
} from './failure-options.js';
import { encodeKey } from './keys.js';
import { configError, fieldPathOf, optionNames, positiveInteger, readOptions } from './options.js';
import { readCost } from './rate-limiter-options.js';
import { breakerOf, type GuardedOutcome, StoreGuard } from './store-guard.js';
import type { LeaseAnswer, Store, StoreLeases } from './stores/store.js';

export interface ConcurrencyLimiterOptions {
  /** `memoryStore()` or `redisStore({ client })`; its clock (if injected) is used. */
  store: Store;
  /** Leases held at once per key. */
  limit: number;
  /** How long a lease holds its slot unless released or renewed first. */
  leaseTtl: Duration;
  /** First part of every storage key. Must not contain `{` or `}`. @default 'rl' */
  prefix?: string;
  /**
   * What answers when the store fails, times out or its circuit is open: `'open'` admits
   * without a lease, `'closed'` refuses (retryAfter: until the circuit's next probe), a store
   * (e.g. `memoryStore()`) holds the leases meanwhile. @default 'open'
   */
  onStoreError?: 'open' | 'closed' | Store;
  /** Longest wait for the store on each call; then the failure policy answers. @default '1s' */
  timeout?: Duration;
  /**
   * As RateLimiter's: the circuit is shared by every limiter on the same store connection.
   * @default { failureThreshold: 5, cooldown: '1s' }
   */
  circuitBreaker?: CircuitBreakerOptions | false;
  /** `onStoreError`, `onDecision`, `onCircuitChange`, as RateLimiter's. */
  hooks?: RateLimiterHooks;
}

/** A held slot. */
export interface Lease {
  /** Unique per acquire (a random UUID). */
  readonly id: string;
  /**
   * Frees the slot. Idempotent: resolves true when this call freed a slot the lease still
   * held, false when it was already released or had expired. Bounded by `timeout`.
   */
  release(): Promise<boolean>;
  /**
   * Extends an unexpired lease to now + leaseTtl (for long work). Resolves false when the lease
   * had expired or was released: its slot may belong to someone else now, so it is not revived.
   */
  renew(): Promise<boolean>;
}

/** A Decision, plus the lease when admitted by a store (not by `onStoreError: 'open'`). */
export interface ConcurrencyDecision extends Decision {
  readonly lease?: Lease;
}

/** `acquire` call options; any other name is a mistake and is reported. */
export interface ConcurrencyAcquireOptions {
  /**
   * Admit only while fewer than this many leases of the key are held (1 to the limiter's
   * `limit`): a share of the slots, leaving the rest to callers that ask with a higher one
   * (a reserve). The decision's `limit` and `remaining` are this share's.
   * @default the limiter's `limit`
   */
  limit?: number;
}

/** Every option name of ConcurrencyLimiterOptions, checked against the type. */
const CONCURRENCY_LIMITER_OPTION_NAMES = optionNames<ConcurrencyLimiterOptions>({
  store: true,
  limit: true,
  leaseTtl: true,
  prefix: true,
  onStoreError: true,
  timeout: true,
  circuitBreaker: true,
  hooks: true,
});

/**
 * At most `limit` requests in flight per key (nginx `limit_conn`). `acquire(key)` answers with
 * a Decision that carries a `lease` when admitted; release it when the work ends. Leases expire
 * after `leaseTtl` on their own, so a crashed holder never leaks a slot.
 *
 * @example
 * ```ts
 * import { ConcurrencyLimiter, memoryStore } from '@floodgate/core';
 *
 * const inFlight = new ConcurrencyLimiter({ store: memoryStore(), limit: 2, leaseTtl: '30s' });
 * const d = await inFlight.acquire('user:42');
 * if (d.allowed && d.lease) {
 *   try {
 *     await doWork();
 *   } finally {
 *     await d.lease.release(); // idempotent
 *   }
 * }
 * ```
 */
export class ConcurrencyLimiter {
  readonly store: Store;
  readonly limit: number;
  /** Lease time to live in milliseconds. */
  readonly leaseTtl: number;
  readonly prefix: string;
  /** Name used in decisions: `concurrency-<limit>`. */
  readonly name: string;
  private readonly leaseTtlUs: number;
  private readonly leases: StoreLeases;
  private readonly fallback: StoreLeases | undefined;
  private readonly guard: StoreGuard;

  constructor(options: ConcurrencyLimiterOptions) {
    const where = fieldPathOf(options, 'ConcurrencyLimiter');
    const o = readOptions(options, where, CONCURRENCY_LIMITER_OPTION_NAMES);
    this.store = o.store as Store;
    this.leases = leasesOf(o.store, `${where}.store`);
    this.limit = positiveInteger(o.limit, `${where}.limit`);
    this.leaseTtlUs = parseDuration(o.leaseTtl, `${where}.leaseTtl`);
    this.leaseTtl = this.leaseTtlUs / 1000;
    const prefix = o.prefix === undefined ? 'rl' : o.prefix;
    if (typeof prefix !== 'string' || prefix === '' || /[{}]/.test(prefix)) {
      throw configError(`${where}.prefix`, prefix, 'a non-empty string without "{" or "}"');
    }
    this.prefix = prefix;
    this.name = `concurrency-${this.limit}`;
    const failure: FailureConfig = readFailureOptions(o, where);
    const onStoreError = failure.onStoreError;
    if (typeof onStoreError === 'object') {
      this.fallback = leasesOf(onStoreError, `${where}.onStoreError`);
    }
    this.guard = new StoreGuard(
      failure,
      breakerOf(this.store),
      `ConcurrencyLimiter (prefix "${prefix}", ${this.name})`,
    );
  }

  /** The circuit breaker's state: `closed` (store in use), `open`, or `half-open` (probing). */
  get circuit(): 'closed' | 'open' | 'half-open' {
    return this.guard.circuit;
  }

  /** Milliseconds until the store's circuit lets the next probe through (0 while closed). */
  nextProbeIn(): number {
    return this.guard.nextProbeIn();
  }

  /**
   * Takes a slot for `key` if fewer than `limit` unexpired leases are held: the decision is
   * admitted and carries the lease. Otherwise it is denied, with `retryAfter` the time until
   * the earliest lease that frees a slot expires (a release may free one sooner). A denial
   * writes nothing. When the store cannot answer, `onStoreError` does (`reason` says why).
   */
  async acquire(key: string, options?: ConcurrencyAcquireOptions): Promise<ConcurrencyDecision> {
    readCost(options as { cost?: number } | undefined, ['limit']);
    const limit = this.callLimit(options?.limit);
    const storageKey = this.storageKey(key);
    const id = randomUUID();
    const context: CallContext = { key, cost: 1, peek: false };
    const take = (leases: StoreLeases) => () =>
      leases.acquire(storageKey, limit, this.leaseTtlUs, id);
    let decision: ConcurrencyDecision;
    if (this.leases.local) {
      // In process: no I/O to bound; a throw still gets the failure policy.
      let answer: LeaseAnswer | undefined;
      try {
        answer = await take(this.leases)();
      } catch {
        answer = undefined;
      }
      decision =
        answer !== undefined
          ? this.toDecision(answer, limit, this.leases, storageKey, id)
          : await this.withoutStore(limit, storageKey, id, take, {
              ok: false,
              failure: 'store-error',
              retryAfter: 0,
            });
    } else {
      const outcome = await this.guard.call(take(this.leases), context);
      decision = outcome.ok
        ? this.toDecision(outcome.value, limit, this.leases, storageKey, id)
        : await this.withoutStore(limit, storageKey, id, take, outcome);
    }
    if (this.guard.config.hooks.onDecision) this.guard.notify('onDecision', decision, context);
    return decision;
  }

  /** Drops every lease held for `key` (in the fallback store too). Bounded by `timeout`. */
  async reset(key: string): Promise<void> {
    const storageKey = this.storageKey(key);
    if (this.fallback) await this.fallback.reset(storageKey);
    await this.guard.bounded(() => this.leases.reset(storageKey));
  }

  /** `<prefix>:{<key>}:leases` — limiters sharing a prefix share a key's slots. */
  storageKey(key: string): string {
    return `${this.prefix}:{${encodeKey(key)}}:leases`;
  }

  /** The failure policy: the fallback store's leases, else open (no lease) or closed. */
  private async withoutStore(
    limit: number,
    storageKey: string,
    id: string,
    take: (leases: StoreLeases) => () => Promise<LeaseAnswer>,
    outcome: Exclude<GuardedOutcome<unknown>, { ok: true }>,
  ): Promise<ConcurrencyDecision> {
    const fallback = this.fallback;
    if (fallback !== undefined) {
      const answer = await this.guard.bounded(take(fallback)).catch(() => undefined);
      if (answer !== undefined) {
        return { ...this.toDecision(answer, limit, fallback, storageKey, id), reason: 'fallback' };
      }
    }
    // A store whose clock is broken (misconfigured) is never answered by admitting.
    const allowed = this.guard.config.onStoreError !== 'closed' && !outcome.error?.misconfigured;
    const wait = allowed ? 0 : outcome.retryAfter;
    return this.decisionOf(
      limit,
      {
        allowed,
        remaining: allowed ? limit : 0,
        resetAfter: wait * 1000,
        retryAfter: wait * 1000,
      },
      outcome.failure,
    );
  }

  private toDecision(
    answer: LeaseAnswer,
    limit: number,
    leases: StoreLeases,
    storageKey: string,
    id: string,
  ): ConcurrencyDecision {
    const decision = this.decisionOf(limit, answer, answer.full ? 'store-full' : undefined);
    if (!answer.allowed) return decision;
    const guard = this.guard;
    const ttl = this.leaseTtlUs;
    const lease: Lease = {
      id,
      release: () => guard.bounded(() => leases.release(storageKey, id)),
      renew: () => guard.bounded(() => leases.renew(storageKey, ttl, id)),
    };
    return { ...decision, lease };
  }

  /** A call's `limit`: an integer from 1 to the limiter's own (which it defaults to). */
  private callLimit(value: unknown): number {
    if (value === undefined) return this.limit;
    if (
      typeof value !== 'number' ||
      !Number.isSafeInteger(value) ||
      value < 1 ||
      value > this.limit
    ) {
      throw new RateLimitArgumentError(
        'limit',
        value,
        `limit must be an integer from 1 to the limiter's limit (${this.limit}), got ${String(value)}`,
      );
    }
    return value;
  }

  private decisionOf(limit: number, answer: LeaseAnswer, reason: Decision['reason']): Decision {
    const view: PolicyDecision = {
      name: this.name,
      allowed: answer.allowed,
      limit,
      quota: limit,
      remaining: answer.remaining,
      resetAfter: answer.resetAfter / 1000,
      retryAfter: answer.retryAfter / 1000,
      delay: 0,
      window: this.leaseTtl,
    };
    const { name, ...fields } = view;
    return {
      ...fields,
      policy: name,
      policies: [view],
      ...(reason === undefined ? {} : { reason }),
    };
  }
}

function leasesOf(store: unknown, field: string): StoreLeases {
  const s = store as Partial<Store> | null | undefined;
  if (s === null || typeof s !== 'object' || typeof s.leases !== 'function') {
    throw configError(
      field,
      store,
      'a store that holds leases: memoryStore() or redisStore({ client })',
    );
  }
  return s.leases();
}
