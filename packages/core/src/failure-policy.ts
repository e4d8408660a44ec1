/**
 * What a RateLimiter does when its store cannot answer: every call is bounded by a timeout, a
 * circuit breaker stops asking a store that keeps failing (both run by StoreGuard,
 * store-guard.ts), and the failure policy (`open`, `closed`, or a fallback store/limiter)
 * answers instead (FailureAnswer, here). Outcomes stay data: the decision's `reason` says what
 * happened and hooks let operators count it.
 */
import { type Decision, toDecision } from './decision.js';
import { parseDuration } from './duration.js';
import type { RateLimitStoreError } from './errors.js';
import { keyTails } from './keys.js';
import { configError, optionNames, positiveInteger, readOptions } from './options.js';
import type { Policy } from './policy.js';
import { type GuardedOutcome, withinTimeout } from './store-guard.js';
import type { PreparedPolicies, Store } from './stores/store.js';

/** Why the store did not answer a call. */
export type StoreFailure = 'store-error' | 'timeout' | 'circuit-open';

/** Anything with `consume`/`peek` answering Decisions: a RateLimiter used as a fallback. */
export interface FallbackLimiter {
  consume(key: string, options?: { cost?: number }): Promise<Decision>;
  peek(key: string, options?: { cost?: number }): Promise<Decision>;
}

/**
 * `'open'` admits, `'closed'` denies, a Store (e.g. `memoryStore()`) decides with the same
 * policies, a RateLimiter decides with its own (e.g. limits divided by the instance count).
 */
export type OnStoreError = 'open' | 'closed' | Store | FallbackLimiter;

export interface CircuitBreakerOptions {
  /** Consecutive failures (errors or timeouts) that open the circuit. @default 5 */
  failureThreshold?: number;
  /** How long an open circuit answers without asking the store before one probe. @default '1s' */
  cooldown?: number | string;
}

/** Circuit states reported to `hooks.onCircuitChange`. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** What the limiter was doing when something happened. */
export interface CallContext {
  readonly key: string;
  readonly cost: number;
  /** `true` for `peek`. */
  readonly peek: boolean;
  /** `true` when the local cache of denied keys answered (no store call was made). */
  readonly cached?: boolean;
  /** `true` when a shadow-mode middleware decided: a denial is counted but not enforced. */
  readonly shadow?: boolean;
}

export interface StoreErrorEvent extends CallContext {
  /** `store-error` or `timeout` (a call skipped by the open circuit is no error). */
  readonly failure: Exclude<StoreFailure, 'circuit-open'>;
  readonly error: RateLimitStoreError;
}

/** One store call (a decision's round trip), for latency metrics. */
export interface StoreCallEvent extends CallContext {
  /** How the call ended: answered, failed, or cut off by the timeout. */
  readonly outcome: 'ok' | Exclude<StoreFailure, 'circuit-open'>;
  /** Milliseconds from the call to its answer (or to the failure or timeout). */
  readonly durationMs: number;
}

export interface RateLimiterHooks {
  /** Called for every store call that failed or timed out (before the failure policy answers). */
  onStoreError?: (event: StoreErrorEvent) => void;
  /** Called with every decision `consume`/`peek` returns, including failure-policy answers. */
  onDecision?: (decision: Decision, context: CallContext) => void;
  /** Called when the circuit breaker changes state. */
  onCircuitChange?: (state: CircuitState) => void;
  /**
   * Called after every store call the limiter makes for a decision (not for calls the open
   * circuit skipped, nor for answers from the in-process memory store or the denied-key cache).
   */
  onStoreCall?: (event: StoreCallEvent) => void;
}

/** @default 1000 ms — long enough for a loaded Redis, short enough to keep a request moving. */
export const DEFAULT_STORE_TIMEOUT_MS = 1000;
/** @default 5 consecutive failures open the circuit. */
export const DEFAULT_FAILURE_THRESHOLD = 5;
/** @default 1000 ms between probes while the circuit is open. */
export const DEFAULT_CIRCUIT_COOLDOWN_MS = 1000;
/** setTimeout's largest delay (2^31 − 1 ms); longer ones fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

export interface FailureConfig {
  readonly onStoreError: OnStoreError;
  readonly timeoutMs: number;
  readonly breaker: { readonly failureThreshold: number; readonly cooldownMs: number } | undefined;
  readonly hooks: RateLimiterHooks;
}

/** Every option name of CircuitBreakerOptions, checked against the type. */
const CIRCUIT_BREAKER_OPTION_NAMES = optionNames<CircuitBreakerOptions>({
  failureThreshold: true,
  cooldown: true,
});

/** Validates the failure options of a RateLimiter (field paths start with `where`). */

/** Every option name of RateLimiterHooks, checked against the type. */
const HOOK_NAMES = optionNames<RateLimiterHooks>({
  onStoreError: true,
  onDecision: true,
  onCircuitChange: true,
  onStoreCall: true,
});

export function readFailureOptions(o: Record<string, unknown>, where: string): FailureConfig {
  const onStoreError = readOnStoreError(o.onStoreError, `${where}.onStoreError`);
  const timeoutMs =
    o.timeout === undefined
      ? DEFAULT_STORE_TIMEOUT_MS
      : readTimerDuration(o.timeout, `${where}.timeout`);
  let breaker: FailureConfig['breaker'];
  if (o.circuitBreaker === false) breaker = undefined;
  else if (o.circuitBreaker === undefined) {
    breaker = {
      failureThreshold: DEFAULT_FAILURE_THRESHOLD,
      cooldownMs: DEFAULT_CIRCUIT_COOLDOWN_MS,
    };
  } else {
    const b = readOptions(
      o.circuitBreaker,
      `${where}.circuitBreaker`,
      CIRCUIT_BREAKER_OPTION_NAMES,
    );
    breaker = {
      failureThreshold:
        b.failureThreshold === undefined
          ? DEFAULT_FAILURE_THRESHOLD
          : positiveInteger(b.failureThreshold, `${where}.circuitBreaker.failureThreshold`),
      cooldownMs:
        b.cooldown === undefined
          ? DEFAULT_CIRCUIT_COOLDOWN_MS
          : readTimerDuration(b.cooldown, `${where}.circuitBreaker.cooldown`),
    };
  }
  const hooks: RateLimiterHooks = {};
  if (o.hooks !== undefined) {
    const h = readOptions(o.hooks, `${where}.hooks`, HOOK_NAMES);
    for (const name of HOOK_NAMES) {
      const hook = h[name];
      if (hook === undefined) continue;
      if (typeof hook !== 'function')
        throw configError(`${where}.hooks.${name}`, hook, 'a function');
      (hooks as Record<string, unknown>)[name] = hook;
    }
  }
  return { onStoreError, timeoutMs, breaker, hooks };
}

function readOnStoreError(value: unknown, field: string): OnStoreError {
  if (value === undefined) return 'open';
  if (value === 'open' || value === 'closed') return value;
  if (value !== null && typeof value === 'object') {
    const v = value as Partial<Store & FallbackLimiter>;
    if (
      typeof v.prepare === 'function' ||
      (typeof v.consume === 'function' && typeof v.peek === 'function')
    ) {
      return value as OnStoreError;
    }
  }
  throw configError(
    field,
    value,
    "'open', 'closed', a fallback store such as memoryStore(), or a fallback RateLimiter",
  );
}

/** A positive duration in milliseconds that setTimeout can honour. */
function readTimerDuration(value: unknown, field: string): number {
  const ms = parseDuration(value, field) / 1000;
  if (ms > MAX_TIMER_MS) throw configError(field, value, 'a positive duration of at most 24 days');
  return ms;
}

/**
 * The failure policy's answer to a call the store could not decide: the fallback store or
 * limiter when one is configured (reason `fallback`), else `'open'` or `'closed'`.
 */
export class FailureAnswer {
  private readonly fallbackStore: PreparedPolicies | undefined;
  private readonly fallbackLimiter: FallbackLimiter | undefined;
  /** The fallback store's key layout, which may differ from the limiter's own store's. */
  private readonly fallbackTails: readonly string[] = [];

  constructor(
    private readonly policies: readonly Policy[],
    private readonly onStoreError: OnStoreError,
    /** The fallback is bounded by the limiter's `timeout` too: one that never settles cannot hang a call. */
    private readonly timeoutMs = DEFAULT_STORE_TIMEOUT_MS,
    /** `<prefix>:{<encoded key>`, the head of a caller's storage keys (rate-limiter.ts). */
    private readonly tagOf: (key: string) => string = (key) => key,
    /** The limiter's `stateKeys`, which a fallback store follows too. */
    stateKeys: 'per-caller' | 'per-policy' = 'per-caller',
  ) {
    if (typeof onStoreError === 'object' && 'prepare' in onStoreError) {
      this.fallbackStore = onStoreError.prepare(policies, { stateKeys });
      this.fallbackTails = keyTails(policies, this.fallbackStore.combined === true);
    } else if (typeof onStoreError === 'object') {
      this.fallbackLimiter = onStoreError;
    }
  }

  /** `key`'s storage keys in the fallback store (built only when the fallback is used). */
  private keysOf(key: string): string[] {
    const tag = this.tagOf(key);
    return this.fallbackTails.map((tail) => tag + tail);
  }

  /** Forgets `key` in the fallback store too (a limiter's `reset`). */
  async reset(key: string): Promise<void> {
    if (this.fallbackStore) await this.fallbackStore.reset(this.keysOf(key));
  }

  /** Refunds, blocks and unblocks reach the fallback store too (it may answer later calls). */
  async refund(key: string, cost: number): Promise<void> {
    if (this.fallbackStore) {
      await this.fallbackStore.refund(this.keysOf(key), cost).catch(() => undefined);
    }
  }

  async block(key: string, micros: number): Promise<void> {
    if (this.fallbackStore) await this.fallbackStore.block(this.keysOf(key), micros);
  }

  async unblock(key: string): Promise<void> {
    if (this.fallbackStore) await this.fallbackStore.unblock(this.keysOf(key));
  }

  /** The decision for a call whose guarded store call did not succeed. */
  async answer(
    context: CallContext,
    outcome: Exclude<GuardedOutcome<unknown>, { ok: true }>,
  ): Promise<Decision> {
    const { cost, peek } = context;
    const store = this.fallbackStore;
    const limiter = this.fallbackLimiter;
    if (store !== undefined) {
      const keys = this.keysOf(context.key);
      const answer = await withinTimeout(() => store.decide(keys, cost, peek), this.timeoutMs);
      if (answer.ok) return { ...toDecision(answer.value, this.policies), reason: 'fallback' };
    } else if (limiter !== undefined) {
      const options = { cost };
      const d = await withinTimeout(
        () => (peek ? limiter.peek(context.key, options) : limiter.consume(context.key, options)),
        this.timeoutMs,
      );
      if (d.ok) return { ...d.value, reason: 'fallback' };
    }
    // A fallback that failed or did not answer in time leaves the default answer: open; a
    // store that cannot be trusted to decide (its clock is broken) is never answered by admitting.
    return failureDecision(
      this.policies,
      this.onStoreError !== 'closed' && outcome.error?.misconfigured !== true,
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
  reason: StoreFailure,
  retryAfter: number,
): Decision {
  const views = policies.map((p) => ({
    name: p.name,
    allowed,
    limit: p.capacity,
    quota: p.limit,
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
    quota: first.quota,
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
