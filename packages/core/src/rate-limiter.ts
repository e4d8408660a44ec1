/**
 * RateLimiter: a store plus one or more policies. Each call is one store round trip that
 * checks every policy and charges all of them or none.
 */
import { createHash } from 'node:crypto';
import { type Decision, type StoreDecision, toDecision } from './decision.js';
import { DeniedCache, type DeniedCacheOptions } from './denied-cache.js';
import { type Duration, parseDuration } from './duration.js';
import { describeValue, RateLimitArgumentError, RateLimitConfigError } from './errors.js';
import {
  type CallContext,
  type CircuitBreakerOptions,
  type FallbackLimiter,
  type GuardedOutcome,
  type OnStoreError,
  type RateLimiterHooks,
  readFailureOptions,
  StoreGuard,
} from './failure-policy.js';
import { encodeKey } from './keys.js';
import { configError, readOptions } from './options.js';
import type { Policy } from './policy.js';
import type { PreparedPolicies, Store } from './stores/store.js';

export interface RateLimiterOptions {
  /** Where state lives: `memoryStore()` or `redisStore({ client })`. */
  store: Store;
  /** One policy or several; a request is admitted only if every policy admits it. */
  policies: Policy | readonly Policy[];
  /** First part of every storage key. Must not contain `{` or `}`. @default 'rl' */
  prefix?: string;
  /**
   * What answers when the store fails, times out or its circuit is open: `'open'` admits,
   * `'closed'` denies, a Store (e.g. `memoryStore()`) decides with these policies, a RateLimiter
   * decides with its own. The decision's `reason` says which failure happened (docs/reliability.md).
   * @default 'open'
   */
  onStoreError?: OnStoreError;
  /** Longest wait for the store on each call; then the failure policy answers. @default '1s' */
  timeout?: Duration;
  /**
   * Stops asking a failing store: after `failureThreshold` consecutive failures, calls get the
   * failure policy at once for `cooldown`, then one call probes the store. `false` disables it.
   * @default { failureThreshold: 5, cooldown: '1s' }
   */
  circuitBreaker?: CircuitBreakerOptions | false;
  /** Callbacks for metrics: `onStoreError`, `onDecision`, `onCircuitChange`. */
  hooks?: RateLimiterHooks;
  /**
   * Remember denied keys in this process until their `retryAfter` and answer them without the
   * store: a flood from one key then costs one store call per retry window (docs/benchmarks.md).
   * `true` uses the defaults (10 000 keys, the process clock).
   * @default false
   */
  deniedCache?: boolean | DeniedCacheOptions;
}

export interface ConsumeOptions {
  /** Units this request takes; 0 reads without writing. @default 1 */
  cost?: number;
}

export interface AcquireOptions extends ConsumeOptions {
  /** Longest time to wait for admission. @default no bound */
  maxWait?: Duration;
}

/** @default 'rl' */
export const DEFAULT_PREFIX = 'rl';

export class RateLimiter {
  readonly store: Store;
  readonly policies: readonly Policy[];
  readonly prefix: string;
  private readonly prepared: PreparedPolicies;
  private readonly head: string;
  private readonly tails: readonly string[];
  /** Recent keys' storage keys (built once, so their strings keep V8's cached hash) and slots. */
  private readonly keyMemo = new Map<string, KeyMemo>();
  private readonly guard: StoreGuard;
  private readonly fallbackStore: PreparedPolicies | undefined;
  private readonly fallbackLimiter: FallbackLimiter | undefined;
  /** Local cache of denials, when `deniedCache` is on. */
  readonly deniedCache: DeniedCache | undefined;

  constructor(options: RateLimiterOptions) {
    const o = readOptions(options, 'RateLimiter', [
      'store',
      'policies',
      'prefix',
      'onStoreError',
      'timeout',
      'circuitBreaker',
      'hooks',
      'deniedCache',
    ]);
    const store = o.store as Store | undefined;
    if (store === null || typeof store !== 'object' || typeof store.prepare !== 'function') {
      throw configError(
        'RateLimiter.store',
        o.store,
        'a store: memoryStore() or redisStore({ client })',
      );
    }
    this.policies = validatePolicies(o.policies);
    const prefix = o.prefix === undefined ? DEFAULT_PREFIX : o.prefix;
    if (typeof prefix !== 'string' || prefix === '' || /[{}]/.test(prefix)) {
      throw configError('RateLimiter.prefix', prefix, 'a non-empty string without "{" or "}"');
    }
    this.prefix = prefix;
    this.store = store;
    this.prepared = store.prepare(this.policies);
    this.head = `${prefix}:{`;
    this.tails = [...this.policies.map((p) => `}:${p.id}`), `}:${blockId(this.policies)}`];
    this.deniedCache = readDeniedCache(o.deniedCache);
    const failure = readFailureOptions(o);
    this.guard = new StoreGuard(failure);
    const fallback = failure.onStoreError;
    if (typeof fallback === 'object' && 'prepare' in fallback) {
      this.fallbackStore = fallback.prepare(this.policies);
    } else if (typeof fallback === 'object') {
      this.fallbackLimiter = fallback;
    }
  }

  /** The circuit breaker's state: `closed` (store in use), `open`, or `half-open` (probing). */
  get circuit(): 'closed' | 'open' | 'half-open' {
    return this.guard.circuit;
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
   * Gives back up to `cost` units (default 1) to every policy at once, in one atomic store
   * call, and answers the decision as it then stands (a read: `peek` with cost 0). Never above
   * capacity and never creating state; per algorithm (current window only, newest log entries,
   * never before now, …): docs/algorithms.md#refunds. For outcome-based counting, or when the
   * real cost is known after the work (consume an estimate, refund the difference).
   */
  async refund(key: string, options?: ConsumeOptions): Promise<Decision> {
    const cost = readCost(options);
    const keys = this.storageKeys(key);
    this.deniedCache?.forget(key);
    const context: CallContext = { key, cost: 0, peek: true };
    if (this.fallbackStore) await this.fallbackStore.refund(keys, cost).catch(() => undefined);
    const outcome = await this.guard.call(() => this.prepared.refund(keys, cost), context);
    if (outcome.ok) return toDecision(outcome.value, this.policies);
    return this.withoutStore(keys, context, outcome);
  }

  /**
   * Blocks `key` for `duration`, or for ever with `'forever'` (the one state kept without a
   * TTL): every consume, acquire and peek is denied with `reason: 'blocked'` (retryAfter −1
   * for ever) until it ends or `unblock(key)`. Nothing is charged while blocked.
   */
  async block(key: string, duration: Duration | 'forever'): Promise<void> {
    let micros = 0;
    if (duration !== 'forever') {
      try {
        micros = parseDuration(duration, 'duration');
      } catch (error) {
        throw new RateLimitArgumentError('duration', duration, (error as Error).message);
      }
    }
    const keys = this.storageKeys(key);
    this.deniedCache?.forget(key);
    if (this.fallbackStore) await this.fallbackStore.block(keys, micros);
    await this.guard.bounded(() => this.prepared.block(keys, micros));
  }

  /** Lifts a block on `key` (by hand or a lockout) and forgets its lockouts in a row. */
  async unblock(key: string): Promise<void> {
    const keys = this.storageKeys(key);
    this.deniedCache?.forget(key);
    if (this.fallbackStore) await this.fallbackStore.unblock(keys);
    await this.guard.bounded(() => this.prepared.unblock(keys));
  }

  /** Forgets everything stored for `key`: it is back to full capacity under every policy. */
  async reset(key: string): Promise<void> {
    const keys = this.storageKeys(key);
    this.deniedCache?.forget(key);
    // A reset must reach the store, so its failure is thrown (bounded by `timeout`).
    if (this.fallbackStore) await this.fallbackStore.reset(keys);
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
  async acquire(key: string, options: AcquireOptions = {}): Promise<Decision> {
    const { maxWait, ...consumeOptions } = options;
    let budget = Number.POSITIVE_INFINITY;
    if (maxWait !== undefined) {
      try {
        budget = parseDuration(maxWait, 'maxWait', true) / 1000;
      } catch (error) {
        throw new RateLimitArgumentError('maxWait', maxWait, (error as Error).message);
      }
    }
    const cost = readCost(consumeOptions);
    const started = performance.now();
    for (;;) {
      const waited = performance.now() - started;
      const decision = this.prepared.reserve
        ? await this.reserve(key, cost, reserveSlack(budget - waited))
        : await this.consume(key, { cost });
      if (decision.allowed) {
        if (decision.delay > 0) await sleep(decision.delay);
        return decision;
      }
      if (decision.retryAfter < 0 || decision.reason === 'blocked') return decision;
      if (performance.now() - started + decision.retryAfter > budget) return decision;
      await sleep(decision.retryAfter);
    }
  }

  /** One reserve-mode round trip (see `acquire`), guarded like `consume`. */
  private async reserve(key: string, cost: number, slack: number): Promise<Decision> {
    const keys = this.storageKeys(key);
    const context: CallContext = { key, cost, peek: false };
    const outcome = await this.guard.call(() => this.prepared.reserve!(keys, cost, slack), context);
    const decision = outcome.ok
      ? toDecision(outcome.value, this.policies)
      : await this.withoutStore(keys, context, outcome);
    if (this.guard.config.hooks.onDecision) this.guard.notify('onDecision', decision, context);
    return decision;
  }

  /**
   * Storage keys of `key`: one per policy, `<prefix>:{<key>}:<policy id>`, then the key's block
   * state, `<prefix>:{<key>}:bk<digest of the policy ids>` (this limiter's lockouts and blocks).
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
      if (memo.size >= KEY_MEMO_SIZE) memo.clear();
      memo.set(key, entry);
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
            this.guard.notify('onDecision', cached, { key, cost, peek });
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
      : await this.withoutStore(keys, context, outcome);
    if (cache !== undefined && outcome.ok && !decision.allowed) {
      cache.remember(key, cost, decision, sentAt);
    }
    if (this.guard.config.hooks.onDecision) this.guard.notify('onDecision', decision, context);
    return decision;
  }

  /** The failure policy's answer when the store could not decide. */
  private async withoutStore(
    keys: readonly string[],
    context: CallContext,
    outcome: Exclude<GuardedOutcome<unknown>, { ok: true }>,
  ): Promise<Decision> {
    const { cost, peek } = context;
    try {
      if (this.fallbackStore) {
        const answer = await this.fallbackStore.decide(keys, cost, peek);
        return { ...toDecision(answer, this.policies), reason: 'fallback' };
      }
      if (this.fallbackLimiter) {
        const options = { cost };
        const d = await (peek
          ? this.fallbackLimiter.peek(context.key, options)
          : this.fallbackLimiter.consume(context.key, options));
        return { ...d, reason: 'fallback' };
      }
    } catch {
      // A failing fallback leaves the default answer: open.
    }
    return failureDecision(
      this.policies,
      this.guard.config.onStoreError !== 'closed',
      outcome.failure,
      outcome.retryAfter,
    );
  }
}

/**
 * The answer of `'open'` (admitted, nothing counted: remaining shows full capacity) or
 * `'closed'` (denied, retry once the circuit would probe the store again).
 */
function failureDecision(
  policies: readonly Policy[],
  allowed: boolean,
  reason: 'store-error' | 'timeout' | 'circuit-open',
  retryAfter: number,
): Decision {
  const views = policies.map((p) => ({
    name: p.name,
    allowed,
    limit: p.capacity,
    remaining: allowed ? p.capacity : 0,
    resetAfter: allowed ? 0 : retryAfter,
    retryAfter: allowed ? 0 : retryAfter,
    delay: 0,
    window: p.window,
  }));
  const first = views[0]!;
  return {
    allowed,
    limit: first.limit,
    remaining: first.remaining,
    resetAfter: first.resetAfter,
    retryAfter: first.retryAfter,
    delay: 0,
    window: first.window,
    policy: first.name,
    policies: views,
    reason,
  };
}

/**
 * A recent key's storage keys, and one slot per key that an in-process store may fill (the
 * memory store keeps the key's entry there, saving a hash lookup per decision).
 */
interface KeyMemo {
  readonly keys: readonly string[];
  readonly slots: unknown[];
}

/** The block state's key suffix: one per set of policies, so limiters never share lockouts. */
function blockId(policies: readonly Policy[]): string {
  const digest = createHash('sha1')
    .update(policies.map((p) => p.id).join(','))
    .digest('base64url');
  return `bk${digest.slice(0, 8)}`;
}

/** Keys whose storage keys a limiter remembers; past it the memo starts over (amortised O(1)). */
const KEY_MEMO_SIZE = 10_000;

function readDeniedCache(value: unknown): DeniedCache | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return new DeniedCache();
  if (value !== null && typeof value === 'object')
    return new DeniedCache(value as DeniedCacheOptions);
  throw configError('RateLimiter.deniedCache', value, 'true, false or { maxKeys?, clock? }');
}

/** What is left of acquire's budget (ms) as the store's reserve slack: whole µs, rounded down. */
function reserveSlack(leftMs: number): number {
  if (leftMs === Number.POSITIVE_INFINITY) return Number.MAX_SAFE_INTEGER;
  return Math.max(0, Math.floor(leftMs * 1000));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.ceil(ms)));
}

function readCost(options: ConsumeOptions | undefined): number {
  if (options === undefined || options.cost === undefined) return 1;
  const cost = options.cost;
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0) {
    throw new RateLimitArgumentError(
      'cost',
      cost,
      `cost must be a non-negative integer, got ${describeValue(cost)}`,
    );
  }
  return cost;
}

function validatePolicies(value: unknown): Policy[] {
  const list = Array.isArray(value) ? value : value === undefined ? [] : [value];
  if (list.length === 0) {
    throw new RateLimitConfigError(
      'FLOODGATE_NO_POLICIES',
      'RateLimiter.policies',
      value,
      'RateLimiter.policies must hold at least one policy, e.g. fixedWindow({ limit: 100, window: "1m" })',
    );
  }
  const names = new Map<string, number>();
  const ids = new Map<string, number>();
  list.forEach((p: Policy, i) => {
    const field = `RateLimiter.policies[${i}]`;
    if (
      p === null ||
      typeof p !== 'object' ||
      typeof p.kind !== 'string' ||
      typeof p.id !== 'string' ||
      !Array.isArray(p.params)
    ) {
      throw configError(
        field,
        p,
        'a policy made by fixedWindow(), slidingLog(), tokenBucket(), gcra(), …',
      );
    }
    const sameName = names.get(p.name);
    if (sameName !== undefined) {
      throw new RateLimitConfigError(
        'FLOODGATE_DUPLICATE_POLICY',
        `${field}.name`,
        p.name,
        `${field}.name "${p.name}" is already the name of policies[${sameName}]; give each policy its own name`,
      );
    }
    const sameId = ids.get(p.id);
    if (sameId !== undefined) {
      throw new RateLimitConfigError(
        'FLOODGATE_DUPLICATE_POLICY',
        field,
        p.name,
        `${field} has the same kind and parameters as policies[${sameId}]; they would share state`,
      );
    }
    names.set(p.name, i);
    ids.set(p.id, i);
  });
  return list as Policy[];
}
