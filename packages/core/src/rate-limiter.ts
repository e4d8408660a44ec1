/**
 * RateLimiter: a store plus one or more policies. Each call is one store round trip that
 * checks every policy and charges all of them or none. Its options and their readers are in
 * rate-limiter-options.ts, the acquire loop in acquire.ts, the answer when the store fails in
 * failure-policy.ts.
 */
import { AcquireLines } from './acquire.js';
import { extendsOnDenial } from './algorithms/fixed-window.js';
import { Ban } from './ban.js';
import { type Decision, type StoreDecision, toDecision } from './decision.js';
import type { DeniedCache } from './denied-cache.js';
import type { Duration } from './duration.js';
import { RateLimitStoreError } from './errors.js';
import { type CallContext, DEFAULT_CIRCUIT_COOLDOWN_MS } from './failure-options.js';
import { FailureAnswer } from './failure-policy.js';
import { type HotKey, type HotKeyTracker, readTopCount } from './hot-keys/hot-key-tracker.js';
import { type KeyMemo, KeyMemoTable } from './key-memo.js';
import { encodeKey, keyTails } from './keys.js';
import { EVERY_KEY } from './live-global.js';
import {
  type ClearLimitOptions,
  type EffectiveLimit,
  effectiveLimits,
  type LimitOverride,
  LiveLimits,
  type SetLimitOptions,
} from './live-limits.js';
import { fieldPathOf, readAs } from './options.js';
import { limitsId, type Policy } from './policy.js';
import { leaseSeam } from './quota-lease/lease-seam.js';
import { QuotaLeases } from './quota-lease/quota-leases.js';
import {
  type AcquireOptions,
  type ConsumeOptions,
  type RateLimiterOptions,
  readBlockArgument,
  readCost,
  readRateLimiterOptions,
} from './rate-limiter-options.js';
import { assertDebt, type Reservation, toReservation } from './reservation.js';
import { assertSettable, readSetOptions, type SetOptions } from './set.js';
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

/** The key of RateLimiter's internal timed-out answer (not exported by the package). */
export const ANSWER_TIMED_OUT = Symbol('floodgate.answerTimedOut');

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
  /** Live limits (`liveLimits`): setLimit, getLimit, clearLimit (live-limits.ts). */
  private readonly live: LiveLimits;
  /** Recent keys' storage keys (built once, so their strings keep V8's cached hash) and slots. */
  private readonly keyMemo = new KeyMemoTable((key) => this.storageKeys(key));
  private readonly guard: StoreGuard;
  private readonly lines: AcquireLines;
  /** The `ban` option's escalation (ban.ts). */
  private readonly ban: Ban | undefined;
  /** What answers when the store cannot (`onStoreError`). */
  private readonly failure: FailureAnswer;
  /** Local cache of denials, when `deniedCache` is on. */
  readonly deniedCache: DeniedCache | undefined;
  /** Quota leases, when `lease` is on (quota-lease/). */
  private readonly leases: QuotaLeases | undefined;
  /** The `hotKeys` sketches (hot-keys/hot-key-tracker.ts), unless `hotKeys: false`. */
  private readonly tracker: HotKeyTracker | undefined;

  constructor(options: RateLimiterOptions) {
    const config = readRateLimiterOptions(options, fieldPathOf(options, 'RateLimiter'));
    const { store, prefix } = config;
    this.policies = config.policies;
    this.prefix = prefix;
    this.store = store;
    const liveLimits = config.liveLimits;
    const globalKey = liveLimits ? `${prefix}:${limitsId(this.policies)}:global` : undefined;
    this.prepared = store.prepare(this.policies, {
      stateKeys: config.stateKeys,
      liveLimits,
      ...(globalKey && { globalKey }),
    });
    this.head = `${prefix}:{`;
    this.tails = keyTails(this.policies, this.prepared.combined === true);
    // Live limits keep a key's block state, overrides and mark of the override for every key in
    // one key of their own, its last (lua/include/blocks.lua; live-global.ts).
    if (liveLimits) this.tails = [...this.tails.slice(0, -1), `}:${limitsId(this.policies)}`];
    // A denial of a fixedWindow with extendWindow moves its own retryAfter: none is cached. With
    // live limits none either: another process's setLimit must be seen by the next decision.
    this.deniedCache =
      liveLimits || this.policies.some(extendsOnDenial) ? undefined : config.deniedCache;
    this.live = new LiveLimits(this.policies, this.prepared, liveLimits);
    this.lines = new AcquireLines(config.maxQueueSize);
    this.tracker = config.hotKeys;
    const ban = config.ban;
    const counter =
      ban &&
      new RateLimiter({ store, prefix: `${prefix}:ban`, policies: ban.counter, hotKeys: false });
    this.ban = ban && new Ban(ban, this, counter!);
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
    if (config.lease !== undefined) {
      const where = `${fieldPathOf(options, 'RateLimiter')}.lease`;
      const seam = leaseSeam(this, this.prepared, this.guard, this.failure, where);
      this.leases = new QuotaLeases(config.lease, this.policies, seam);
    }
  }

  /** Gives back the units of this limiter's leased blocks that may be (`lease`) and stops leasing. */
  async close(): Promise<void> {
    this.prepared.closeLive?.();
    await this.leases?.close();
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
    const decision = this.decide(key, options, false);
    return this.ban ? decision.then((d) => this.ban!.judge(key, d, false)) : decision;
  }

  /**
   * The `n` keys (default 10) taking the most of this limiter's recent decisions (`consume` and
   * `acquire`; `peek` is a read), highest rate first, from a fixed-memory sketch of this process's
   * traffic: `rate` is decisions per second over the last second or so (an over-estimate by at
   * most `error`), `share` the fraction of all decisions. `[]` when the `hotKeys` option is false.
   *
   * @example
   * ```ts
   * for (const { key, rate, share } of limiter.hotKeys(5)) {
   *   console.log(`${key}: ${rate.toFixed(0)}/s, ${(share * 100).toFixed(1)} % of decisions`);
   * }
   * ```
   */
  hotKeys(n?: number): HotKey[] {
    const count = readTopCount(n);
    return this.tracker?.traffic.top(count) ?? [];
  }

  /**
   * The `n` keys (default 10) denied most in this process recently (by a policy, a block or a
   * ban; not failure-policy answers), most denials per second first: "who is being limited".
   * `share` is the fraction of all such denials. `[]` when the `hotKeys` option is false.
   *
   * @example
   * ```ts
   * const [worst] = limiter.deniedKeys(1);
   * if (worst) console.log(`${worst.key} is denied ${worst.rate.toFixed(0)} times a second`);
   * ```
   */
  deniedKeys(n?: number): HotKey[] {
    const count = readTopCount(n);
    return this.tracker?.denied.top(count) ?? [];
  }

  /** Internal (the HTTP layer): `consume` answered as if its store call had timed out. */
  async [ANSWER_TIMED_OUT](key: string, cost: number): Promise<Decision> {
    const context: CallContext = { key, cost, peek: false };
    const retryAfter = this.guard.config.breaker?.cooldownMs ?? DEFAULT_CIRCUIT_COOLDOWN_MS;
    const outcome = { ok: false, failure: 'timeout', retryAfter } as const;
    const decision = await this.failure.answer(context, outcome);
    if (this.guard.config.hooks.onDecision) this.guard.notify('onDecision', decision, context);
    return decision;
  }

  /** What `consume(key, options)` would answer now, without writing anything. */
  peek(key: string, options?: ConsumeOptions): Promise<Decision> {
    const decision = this.decide(key, options, true);
    return this.ban ? decision.then((d) => this.ban!.judge(key, d, true)) : decision;
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

  /**
   * Writes `key`'s count directly (rate-limiter-flexible's `set`; migration and admin tools):
   * every policy forgets the key's state and is charged `used` units, in one atomic store call
   * (per algorithm: docs/algorithms.md#set; blocks are kept). Answers a read of cost 1.
   *
   * @example
   * ```ts
   * await limiter.set('userA', { used: 40 }); // 40 of the window's units already spent
   * ```
   */
  async set(key: string, options: SetOptions): Promise<Decision> {
    const used = readSetOptions(options);
    assertSettable(this, this.prepared);
    return this.adjust(key, used, 'set');
  }

  /** Charges an estimate now, settled once the real cost is known: see Reservation. */
  async reserve(key: string, options?: ConsumeOptions): Promise<Reservation> {
    const estimate = readCost(options);
    assertDebt(this, this.prepared, 'reserve');
    return toReservation(await this.consume(key, { cost: estimate }), estimate, key, this);
  }

  /** A refund, a charge or a set: one guarded store call; answers the key as it then stands. */
  private async adjust(
    key: string,
    cost: number,
    how: 'refund' | 'charge' | 'set',
  ): Promise<Decision> {
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

  /** Lifts a block on `key` (by hand, a lockout or a ban) and forgets its lockouts in a row. */
  async unblock(key: string): Promise<void> {
    await this.ban?.forget(key);
    const keys = this.forget(key);
    await this.failure.unblock(key);
    await this.guard.bounded(() => this.prepared.unblock(keys));
  }

  /** `key`'s storage keys, its denied-cache entry dropped (the store is about to change). */
  private forget(key: string): string[] {
    this.deniedCache?.forget(key);
    return this.storageKeys(key);
  }

  /**
   * Overrides a policy's parameters for `key` (limiter option `liveLimits`): every process's next
   * decision for the key uses them, and its counts are carried as `options.carry` says
   * (default 'as-is'). An override replaces the key's earlier one of the same policy; with a
   * `ttl` the key's overrides lapse then. Resolves once the store holds it.
   *
   * @example
   * ```ts
   * await limiter.setLimit('customer-42', { policy: 'per-month', limit: 50_000 }, { carry: 'additive' });
   * ```
   */
  async setLimit(
    key: string,
    override: LimitOverride | readonly LimitOverride[],
    options?: SetLimitOptions,
  ): Promise<void> {
    const change = this.live.change(override, options);
    if (key === EVERY_KEY) return this.guard.bounded(() => this.live.applyGlobal(change));
    const keys = this.forget(key);
    await this.guard.bounded(() => this.live.apply(keys, change));
  }

  /** Drops every override of `key`: it goes back to the limiter's own parameters (carried). */
  async clearLimit(key: string, options?: ClearLimitOptions): Promise<void> {
    const change = this.live.clear(options);
    if (key === EVERY_KEY) return this.guard.bounded(() => this.live.applyGlobal(change));
    const keys = this.forget(key);
    await this.guard.bounded(() => this.live.apply(keys, change));
  }

  /** The effective parameters of every policy for `key`, by policy name (a store read). */
  async getLimit(key: string): Promise<Record<string, EffectiveLimit>> {
    if (key === EVERY_KEY) return this.live.readGlobal((read) => this.guard.bounded(read));
    const keys = this.storageKeys(key);
    const read = await this.guard.bounded(() => this.prepared.decide(keys, 0, true));
    return effectiveLimits(this.policies, read.live);
  }

  /** Forgets everything stored for `key`: it is back to full capacity under every policy. */
  async reset(key: string): Promise<void> {
    await this.ban?.forget(key);
    const keys = this.forget(key);
    // A reset must reach the store, so its failure is thrown (bounded by `timeout`).
    await this.failure.reset(key);
    await this.guard.bounded(() => this.prepared.reset(keys));
  }

  /**
   * Forgets every key of this limiter, blocks included, and its live limits (each key's
   * overrides and the override for every key, '*'): it is back to its own parameters (other
   * limiters on the prefix keep theirs); answers how many storage keys went. On Redis a SCAN of every master, slow on big
   * keyspaces and not bounded by `timeout` (stores/reset-all.ts). Failures are thrown.
   */
  async resetAll(): Promise<number> {
    const resetAll = this.prepared.resetAll;
    if (resetAll === undefined) {
      throw new RateLimitStoreError(`the ${this.store.kind} store cannot resetAll`);
    }
    this.deniedCache?.clear();
    await this.ban?.resetAll();
    await this.failure.resetAll(this.head);
    return resetAll(this.head, this.tails);
  }

  /**
   * Waits until `cost` is admitted and resolves with the admitting decision (Guava `acquire`),
   * or with a denial once waiting longer would pass `maxWait` (Guava `tryAcquire(timeout)`) or
   * the cost can never be admitted (retryAfter −1). Smooth policies reserve at once: the store
   * charges the request now if its next-free time is within what is left of `maxWait`, and
   * acquire sleeps the returned `delay` (so several processes queue in order on one key). Other
   * policies are retried after each denial's `retryAfter`. The admitting decision's `delay` is
   * the time already waited for the reservation. Waiters on one key in this process are served
   * first come, first served, at most `maxQueueSize` of them (then reason 'queue-full').
   */
  acquire(key: string, options?: AcquireOptions): Promise<Decision> {
    const reserve =
      this.prepared.reserve && ((c: number, s: number) => this.reserveForAcquire(key, c, s));
    const consume = (cost: number) => this.consume(key, { cost });
    return this.lines.wait(key, options, reserve ?? consume, (cost) => this.peek(key, { cost }));
  }

  /** One reserve-mode round trip (see `acquire`), guarded like `consume`. */
  private async reserveForAcquire(key: string, cost: number, slack: number): Promise<Decision> {
    const keys = this.storageKeys(key);
    const context: CallContext = { key, cost, peek: false };
    const outcome = await this.guard.call(() => this.prepared.reserve!(keys, cost, slack), context);
    const decision = outcome.ok
      ? toDecision(outcome.value, this.policies)
      : await this.failure.answer(context, outcome);
    this.tracker?.record(key, decision, false);
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
          this.tracker?.record(key, cached, peek);
          if (this.guard.config.hooks.onDecision) {
            this.guard.notify('onDecision', cached, { key, cost, peek, cached: true });
          }
          return Promise.resolve(cached);
        }
      }
      if (!peek && this.leases !== undefined) {
        const leased = this.leases.consume(key, cost);
        if (leased !== undefined) return this.leased(leased, key, cost);
      }
      memo = this.keyMemo.get(key);
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
        this.tracker?.record(key, decision, peek);
        if (this.guard.config.hooks.onDecision) {
          this.guard.notify('onDecision', decision, { key, cost, peek });
        }
        return Promise.resolve(decision);
      }
    }
    return this.decideRemote(key, keys, cost, peek);
  }

  /** A decision from a leased block, reported to `hooks.onDecision` like any other. */
  private leased(decision: Promise<Decision>, key: string, cost: number): Promise<Decision> {
    if (!this.guard.config.hooks.onDecision) return decision;
    return decision.then((d) => {
      this.guard.notify('onDecision', d, { key, cost, peek: false });
      return d;
    });
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
    this.tracker?.record(key, decision, peek);
    if (this.guard.config.hooks.onDecision) this.guard.notify('onDecision', decision, context);
    return decision;
  }
}
