/**
 * RateLimiter: a store plus one or more policies. Each call is one store round trip that
 * checks every policy and charges all of them or none. Its options and their readers are in
 * rate-limiter-options.ts, the acquire loop in acquire.ts, the answer when the store fails in
 * failure-policy.ts.
 */
import { waitForAdmission } from './acquire.js';
import { type Decision, type StoreDecision, toDecision } from './decision.js';
import type { DeniedCache } from './denied-cache.js';
import type { Duration } from './duration.js';
import { type CallContext, FailureAnswer } from './failure-policy.js';
import { KEY_MEMO_BYTES, KEY_MEMO_ENTRY_BYTES, KEY_MEMO_SIZE, type KeyMemo } from './key-memo.js';
import { encodeKey, keyTails } from './keys.js';
import { fieldPathOf, readAs } from './options.js';
import type { Policy } from './policy.js';
import {
  type AcquireOptions,
  type ConsumeOptions,
  type RateLimiterOptions,
  readBlockArgument,
  readCost,
  readRateLimiterOptions,
} from './rate-limiter-options.js';
import { assertDebt, type Reservation, toReservation } from './reservation.js';
import { breakerOf, StoreGuard } from './store-guard.js';
import type { PreparedPolicies, Store } from './stores/store.js';

/**
 * `new RateLimiter(options)` whose configuration errors name fields under `where`, the
 * adapter's own name for these options (e.g. `rateLimit.policies[0]`, not
 * `RateLimiter.policies[0]`). For adapters, via `@floodgate/core/http`.
 */
export function createRateLimiter(options: RateLimiterOptions, where: string): RateLimiter {
  return readAs(options, where, () => new RateLimiter(options));
}

/**
 * A store plus one or more policies. Every call is one store round trip that checks every
 * policy and charges all of them or none; the answer is a Decision (data, never an exception).
 * When the store fails, `onStoreError` answers (default: admit), within `timeout`.
 *
 * @example
 * ```ts
 * import { fixedWindow, RateLimiter, redisStore } from '@floodgate/core';
 * import { Redis } from 'ioredis';
 *
 * const limiter = new RateLimiter({
 *   store: redisStore({ client: new Redis() }),
 *   policies: [fixedWindow({ limit: 1, window: '1s' }), fixedWindow({ limit: 5, window: '1m' })],
 * });
 * const d = await limiter.consume('userA:APIX');
 * if (!d.allowed) console.log(`limited by ${d.policy}, retry in ${d.retryAfter} ms`);
 * ```
 */
export class RateLimiter {
  readonly store: Store;
  readonly policies: readonly Policy[];
  readonly prefix: string;
  private readonly prepared: PreparedPolicies;
  private readonly head: string;
  private readonly tails: readonly string[];
  /** Recent keys' storage keys (built once, so their strings keep V8's cached hash) and slots. */
  private readonly keyMemo = new Map<string, KeyMemo>();
  /** What the memo holds, counted as in KEY_MEMO_BYTES. */
  private keyMemoBytes = 0;
  private readonly guard: StoreGuard;
  /** What answers when the store cannot (`onStoreError`). */
  private readonly failure: FailureAnswer;
  /** Local cache of denials, when `deniedCache` is on. */
  readonly deniedCache: DeniedCache | undefined;

  constructor(options: RateLimiterOptions) {
    const config = readRateLimiterOptions(options, fieldPathOf(options, 'RateLimiter'));
    const { store, prefix } = config;
    this.policies = config.policies;
    this.prefix = prefix;
    this.store = store;
    this.prepared = store.prepare(this.policies, { stateKeys: config.stateKeys });
    this.head = `${prefix}:{`;
    this.tails = keyTails(this.policies, this.prepared.combined === true);
    this.deniedCache = config.deniedCache;
    this.guard = new StoreGuard(
      config.failure,
      breakerOf(store),
      `RateLimiter (prefix "${prefix}", ${this.policies.map((p) => p.name).join(', ')})`,
    );
    this.failure = new FailureAnswer(
      this.policies,
      config.failure.onStoreError,
      config.failure.timeoutMs,
      (key) => this.head + encodeKey(key),
      config.stateKeys,
    );
  }

  /** The circuit breaker's state: `closed` (store in use), `open`, or `half-open` (probing). */
  get circuit(): 'closed' | 'open' | 'half-open' {
    return this.guard.circuit;
  }

  /**
   * Milliseconds until the store's circuit breaker lets the next probe through: 0 while it is
   * closed. Every limiter on one store connection shares the breaker. An HTTP 503 answered for
   * a store outage sends this as `Retry-After`.
   */
  nextProbeIn(): number {
    return this.guard.nextProbeIn();
  }

  /** Charges `cost` (default 1) against every policy, or nothing if any policy denies. */
  consume(key: string, options?: ConsumeOptions): Promise<Decision> {
    return this.decide(key, options, false);
  }

  /** What `consume(key, options)` would answer now, without writing anything. */
  peek(key: string, options?: ConsumeOptions): Promise<Decision> {
    return this.decide(key, options, true);
  }

  /**
   * Gives back up to `cost` units (default 1) to every policy in one atomic store call and
   * answers the decision as it then stands (a read); per algorithm: docs/algorithms.md#refunds.
   */
  async refund(key: string, options?: ConsumeOptions): Promise<Decision> {
    return this.adjust(key, readCost(options), 'refund');
  }

  /** Charges `cost` (default 1) to every policy even past its limit, blocked or not: debt
   *  (docs/algorithms.md#debt). Answers a read of cost 1, from the same store call. */
  async penalize(key: string, options?: ConsumeOptions): Promise<Decision> {
    return this.adjust(key, readCost(options), 'charge');
  }

  /** Charges an estimate now, settled once the real cost is known: see Reservation. */
  async reserve(key: string, options?: ConsumeOptions): Promise<Reservation> {
    const estimate = readCost(options);
    assertDebt(this, this.prepared, 'reserve');
    return toReservation(await this.consume(key, { cost: estimate }), estimate, key, this);
  }

  /** A refund or a charge: one guarded store call; answers the key as it then stands. */
  private async adjust(key: string, cost: number, how: 'refund' | 'charge'): Promise<Decision> {
    if (how === 'charge') assertDebt(this, this.prepared, 'penalize');
    const keys = this.forget(key);
    const context: CallContext = { key, cost: how === 'refund' ? 0 : 1, peek: true };
    await this.failure[how](key, cost);
    const outcome = await this.guard.call(() => this.prepared[how]!(keys, cost), context);
    if (outcome.ok) return toDecision(outcome.value, this.policies);
    return this.failure.answer(context, outcome);
  }

  /** Blocks `key` for `duration` or `'forever'` (no TTL): denied with reason 'blocked'. */
  async block(key: string, duration: Duration | 'forever'): Promise<void> {
    const micros = readBlockArgument(duration);
    const keys = this.forget(key);
    await this.failure.block(key, micros);
    await this.guard.bounded(() => this.prepared.block(keys, micros));
  }

  /** Lifts a block on `key` (by hand or a lockout) and forgets its lockouts in a row. */
  async unblock(key: string): Promise<void> {
    const keys = this.forget(key);
    await this.failure.unblock(key);
    await this.guard.bounded(() => this.prepared.unblock(keys));
  }

  /** `key`'s storage keys, its denied-cache entry dropped (the store is about to change). */
  private forget(key: string): string[] {
    this.deniedCache?.forget(key);
    return this.storageKeys(key);
  }

  /** Forgets everything stored for `key`: it is back to full capacity under every policy. */
  async reset(key: string): Promise<void> {
    const keys = this.storageKeys(key);
    this.deniedCache?.forget(key);
    // A reset must reach the store, so its failure is thrown (bounded by `timeout`).
    await this.failure.reset(key);
    await this.guard.bounded(() => this.prepared.reset(keys));
  }

  /**
   * Waits until `cost` is admitted and resolves with the admitting decision (Guava `acquire`),
   * or with a denial once waiting longer would pass `maxWait` (Guava `tryAcquire(timeout)`) or
   * the cost can never be admitted (retryAfter −1). Smooth policies reserve at once: the store
   * charges the request now if its next-free time is within what is left of `maxWait`, and
   * acquire sleeps the returned `delay` (so several processes queue in order on one key). Other
   * policies are retried after each denial's `retryAfter`. The admitting decision's `delay` is
   * the time already waited for the reservation; nothing more needs to be waited.
   */
  acquire(key: string, options?: AcquireOptions): Promise<Decision> {
    return waitForAdmission(options, (cost, slack) =>
      this.prepared.reserve
        ? this.reserveForAcquire(key, cost, slack)
        : this.consume(key, { cost }),
    );
  }

  /** One reserve-mode round trip (see `acquire`), guarded like `consume`. */
  private async reserveForAcquire(key: string, cost: number, slack: number): Promise<Decision> {
    const keys = this.storageKeys(key);
    const context: CallContext = { key, cost, peek: false };
    const outcome = await this.guard.call(() => this.prepared.reserve!(keys, cost, slack), context);
    const decision = outcome.ok
      ? toDecision(outcome.value, this.policies)
      : await this.failure.answer(context, outcome);
    if (this.guard.config.hooks.onDecision) this.guard.notify('onDecision', decision, context);
    return decision;
  }

  /**
   * Storage keys of `key`: one per policy, `<prefix>:{<key>}:<policy id>`, or one for all of them,
   * `<prefix>:{<key>}:st<digest of the policy ids>`, where the store keeps them in one key
   * (redisStore, keys.ts `sharesOneKey`); then the key's block state,
   * `<prefix>:{<key>}:bk<digest of the policy ids>` (this limiter's lockouts and blocks).
   */
  storageKeys(key: string): string[] {
    const tag = this.head + encodeKey(key);
    return this.tails.map((tail) => tag + tail);
  }

  /**
   * `storageKeys` for the hot path, remembered for up to KEY_MEMO_SIZE recent keys: a freshly
   * concatenated key costs a flatten and a hash on every Map or Redis lookup (measured ~10×
   * a lookup by a reused string; docs/benchmarks.md).
   */
  private keysOf(key: string): KeyMemo {
    const memo = this.keyMemo;
    let entry = memo.get(key);
    if (entry === undefined) {
      const keys = this.storageKeys(key);
      entry = { keys, slots: new Array(keys.length) };
      let bytes = key.length;
      for (const k of keys) bytes += k.length;
      bytes = bytes * 2 + KEY_MEMO_ENTRY_BYTES;
      if (memo.size >= KEY_MEMO_SIZE || this.keyMemoBytes + bytes > KEY_MEMO_BYTES) {
        memo.clear();
        this.keyMemoBytes = 0;
      }
      memo.set(key, entry);
      this.keyMemoBytes += bytes;
    }
    return entry;
  }

  /**
   * The hot path. Not `async`: an in-process store or a cached denial answers with an already
   * resolved promise and no extra microtask hops; only a store round trip goes through
   * `decideRemote`. Bad arguments still reject (never throw synchronously).
   */
  private decide(
    key: string,
    options: ConsumeOptions | undefined,
    peek: boolean,
  ): Promise<Decision> {
    let cost: number;
    let memo: KeyMemo;
    try {
      cost = readCost(options);
      const cache = this.deniedCache;
      if (cache !== undefined) {
        // A cached denial was validated and decided by the store: no keys, no round trip.
        const cached = cache.lookup(key, cost);
        if (cached !== undefined) {
          if (this.guard.config.hooks.onDecision) {
            this.guard.notify('onDecision', cached, { key, cost, peek, cached: true });
          }
          return Promise.resolve(cached);
        }
      }
      memo = this.keysOf(key);
    } catch (error) {
      return Promise.reject(error);
    }
    const keys = memo.keys;
    const cache = this.deniedCache;
    const decideNow = this.prepared.decideNow;
    if (decideNow !== undefined) {
      // In-process store: no I/O to bound, no promise chain, no timer per call.
      let answer: StoreDecision | undefined;
      try {
        answer = decideNow(keys, cost, peek, memo.slots);
      } catch {
        // Fall through: the guarded call below fails the same way and the failure policy answers.
      }
      if (answer !== undefined) {
        const decision = toDecision(answer, this.policies);
        if (cache !== undefined && !decision.allowed) {
          cache.remember(key, cost, decision, cache.now());
        }
        if (this.guard.config.hooks.onDecision) {
          this.guard.notify('onDecision', decision, { key, cost, peek });
        }
        return Promise.resolve(decision);
      }
    }
    return this.decideRemote(key, keys, cost, peek);
  }

  /** A store round trip under the timeout, circuit breaker and failure policy. */
  private async decideRemote(
    key: string,
    keys: readonly string[],
    cost: number,
    peek: boolean,
  ): Promise<Decision> {
    const cache = this.deniedCache;
    const context: CallContext = { key, cost, peek };
    const sentAt = cache?.now() ?? 0;
    const outcome = await this.guard.call(() => this.prepared.decide(keys, cost, peek), context);
    const decision = outcome.ok
      ? toDecision(outcome.value, this.policies)
      : await this.failure.answer(context, outcome);
    if (cache !== undefined && outcome.ok && !decision.allowed) {
      cache.remember(key, cost, decision, sentAt);
    }
    if (this.guard.config.hooks.onDecision) this.guard.notify('onDecision', decision, context);
    return decision;
  }
}
