/**
 * What a RateLimiter does when its store cannot answer: every call is bounded by a timeout, a
 * circuit breaker stops asking a store that keeps failing, and the failure policy (`open`,
 * `closed`, or a fallback store/limiter) answers instead. Outcomes stay data: the decision's
 * `reason` says what happened and hooks let operators count it. Nothing here ever throws into
 * the caller or leaves a rejection unhandled.
 */

import type { Decision } from './decision.js';
import { parseDuration } from './duration.js';
import { RateLimitStoreError } from './errors.js';
import { configError, positiveInteger, readOptions } from './options.js';
import { abandon } from './stores/send-ticket.js';
import type { Store } from './stores/store.js';

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
}

export interface StoreErrorEvent extends CallContext {
  /** `store-error` or `timeout` (a call skipped by the open circuit is no error). */
  readonly failure: Exclude<StoreFailure, 'circuit-open'>;
  readonly error: RateLimitStoreError;
}

export interface RateLimiterHooks {
  /** Called for every store call that failed or timed out (before the failure policy answers). */
  onStoreError?: (event: StoreErrorEvent) => void;
  /** Called with every decision `consume`/`peek` returns, including failure-policy answers. */
  onDecision?: (decision: Decision, context: CallContext) => void;
  /** Called when the circuit breaker changes state. */
  onCircuitChange?: (state: CircuitState) => void;
}

/** @default 1000 ms — long enough for a loaded Redis, short enough to keep a request moving. */
export const DEFAULT_STORE_TIMEOUT_MS = 1000;
/** @default 5 consecutive failures open the circuit. */
export const DEFAULT_FAILURE_THRESHOLD = 5;
/** @default 1000 ms between probes while the circuit is open. */
export const DEFAULT_CIRCUIT_COOLDOWN_MS = 1000;
/** setTimeout's largest delay (2^31 − 1 ms); longer ones fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

export type GuardedOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      readonly failure: StoreFailure;
      readonly error?: RateLimitStoreError;
      /** For `closed`: ms until the circuit lets a probe through (or the cooldown). */
      readonly retryAfter: number;
    };

export interface FailureConfig {
  readonly onStoreError: OnStoreError;
  readonly timeoutMs: number;
  readonly breaker: { readonly failureThreshold: number; readonly cooldownMs: number } | undefined;
  readonly hooks: RateLimiterHooks;
}

/** Validates the failure options of a RateLimiter (field names start with `RateLimiter.`). */
export function readFailureOptions(o: Record<string, unknown>): FailureConfig {
  const onStoreError = readOnStoreError(o.onStoreError);
  const timeoutMs = o.timeout === undefined ? DEFAULT_STORE_TIMEOUT_MS : readTimeout(o.timeout);
  let breaker: FailureConfig['breaker'];
  if (o.circuitBreaker === false) breaker = undefined;
  else if (o.circuitBreaker === undefined) {
    breaker = {
      failureThreshold: DEFAULT_FAILURE_THRESHOLD,
      cooldownMs: DEFAULT_CIRCUIT_COOLDOWN_MS,
    };
  } else {
    const b = readOptions(o.circuitBreaker, 'RateLimiter.circuitBreaker', [
      'failureThreshold',
      'cooldown',
    ]);
    breaker = {
      failureThreshold:
        b.failureThreshold === undefined
          ? DEFAULT_FAILURE_THRESHOLD
          : positiveInteger(b.failureThreshold, 'RateLimiter.circuitBreaker.failureThreshold'),
      cooldownMs:
        b.cooldown === undefined
          ? DEFAULT_CIRCUIT_COOLDOWN_MS
          : readTimerDuration(b.cooldown, 'RateLimiter.circuitBreaker.cooldown'),
    };
  }
  const hooks: RateLimiterHooks = {};
  if (o.hooks !== undefined) {
    const h = readOptions(o.hooks, 'RateLimiter.hooks', [
      'onStoreError',
      'onDecision',
      'onCircuitChange',
    ]);
    for (const name of ['onStoreError', 'onDecision', 'onCircuitChange'] as const) {
      const hook = h[name];
      if (hook === undefined) continue;
      if (typeof hook !== 'function')
        throw configError(`RateLimiter.hooks.${name}`, hook, 'a function');
      (hooks as Record<string, unknown>)[name] = hook;
    }
  }
  return { onStoreError, timeoutMs, breaker, hooks };
}

function readOnStoreError(value: unknown): OnStoreError {
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
    'RateLimiter.onStoreError',
    value,
    "'open', 'closed', a fallback store such as memoryStore(), or a fallback RateLimiter",
  );
}

function readTimeout(value: unknown): number {
  return readTimerDuration(value, 'RateLimiter.timeout');
}

/** A positive duration in milliseconds that setTimeout can honour. */
function readTimerDuration(value: unknown, field: string): number {
  const ms = parseDuration(value, field) / 1000;
  if (ms > MAX_TIMER_MS) throw configError(field, value, 'a positive duration of at most 24 days');
  return ms;
}

/**
 * Runs store calls under the timeout and the circuit breaker. Consecutive failures past the
 * threshold open the circuit for the cooldown; then one call probes the store (half-open) while
 * the others keep getting the failure policy; its success closes the circuit.
 */
export class StoreGuard {
  private state: CircuitState = 'closed';
  private failures = 0;
  private reopensAt = 0;
  private warned = false;

  constructor(readonly config: FailureConfig) {}

  /** Current circuit state. */
  get circuit(): CircuitState {
    return this.state;
  }

  call<T>(operation: () => Promise<T>, context: CallContext): Promise<GuardedOutcome<T>> {
    const breaker = this.config.breaker;
    if (breaker !== undefined && this.state !== 'closed') {
      const now = performance.now();
      if (this.state === 'half-open' || now < this.reopensAt) {
        return Promise.resolve({
          ok: false,
          failure: 'circuit-open',
          retryAfter: Math.max(0, this.reopensAt - now) || breaker.cooldownMs,
        });
      }
      this.setState('half-open');
    }
    const timeoutMs = this.config.timeoutMs;
    return new Promise((resolve) => {
      let settled = false;
      const fail = (failure: 'store-error' | 'timeout', error: RateLimitStoreError): void => {
        settled = true;
        this.failed();
        this.notify('onStoreError', { ...context, failure, error });
        resolve({
          ok: false,
          failure,
          error,
          retryAfter: this.config.breaker?.cooldownMs ?? DEFAULT_CIRCUIT_COOLDOWN_MS,
        });
      };
      const timer = setTimeout(() => {
        if (settled) return;
        // The answer is the failure policy's now: a command still queued must never run.
        abandon(pending);
        fail('timeout', new RateLimitStoreError(`the store did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      let pending: Promise<T>;
      try {
        pending = operation();
      } catch (error) {
        pending = Promise.reject(error);
      }
      // Both handlers are always attached: a call that answers after its timeout is dropped,
      // never left as an unhandled rejection.
      pending.then(
        (value) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          this.succeeded();
          resolve({ ok: true, value });
        },
        (error: unknown) => {
          if (settled) return;
          clearTimeout(timer);
          fail('store-error', asStoreError(error));
        },
      );
    });
  }

  /** Like `call`, for operations whose failure the caller must see (reset): throws on failure. */
  async bounded<T>(operation: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeoutMs = this.config.timeoutMs;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new RateLimitStoreError(`the store did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    const pending = operation();
    pending.catch(() => undefined);
    try {
      return await Promise.race([pending, timeout]);
    } catch (error) {
      abandon(pending);
      throw asStoreError(error);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Calls a hook; a hook that throws is reported once as a process warning, never rethrown. */
  notify<K extends keyof RateLimiterHooks>(
    name: K,
    ...args: Parameters<NonNullable<RateLimiterHooks[K]>>
  ): void {
    const hook = this.config.hooks[name] as ((...a: unknown[]) => void) | undefined;
    if (hook === undefined) return;
    try {
      hook(...args);
    } catch (error) {
      if (this.warned) return;
      this.warned = true;
      process.emitWarning(
        `RateLimiter hooks.${name} threw (further hook errors are ignored): ${(error as Error)?.message ?? error}`,
        { code: 'FLOODGATE_HOOK_ERROR' },
      );
    }
  }

  private succeeded(): void {
    this.failures = 0;
    if (this.state !== 'closed') this.setState('closed');
  }

  private failed(): void {
    const breaker = this.config.breaker;
    if (breaker === undefined) return;
    this.failures++;
    if (this.state === 'half-open' || this.failures >= breaker.failureThreshold) {
      this.reopensAt = performance.now() + breaker.cooldownMs;
      if (this.state !== 'open') this.setState('open');
    }
  }

  private setState(state: CircuitState): void {
    this.state = state;
    this.notify('onCircuitChange', state);
  }
}

function asStoreError(error: unknown): RateLimitStoreError {
  if (error instanceof RateLimitStoreError) return error;
  return new RateLimitStoreError(
    `the store failed: ${(error as Error)?.message ?? String(error)}`,
    {
      cause: error,
    },
  );
}
