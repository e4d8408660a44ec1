/**
 * StoreGuard: runs every store call of a limiter under its timeout and the circuit breaker of
 * its store, and turns the outcome into data (`GuardedOutcome`) for the failure policy to
 * answer. Nothing here ever throws into the caller or leaves a rejection unhandled.
 */
import { emitWarning, RateLimitStoreError } from './errors.js';
import {
  type CallContext,
  type CircuitState,
  DEFAULT_CIRCUIT_COOLDOWN_MS,
  type FailureConfig,
  type RateLimiterHooks,
  type StoreFailure,
} from './failure-options.js';
import { HookCaller } from './hook-caller.js';
import { failureDetail } from './store-failure-detail.js';
import { abandon } from './stores/send-ticket.js';
import type { Store } from './stores/store.js';

export type GuardedOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      readonly failure: StoreFailure;
      readonly error?: RateLimitStoreError;
      /** For `closed`: ms until the circuit lets a probe through (or the cooldown). */
      readonly retryAfter: number;
    };

/**
 * The circuit of one store connection, shared by every limiter on it: consecutive failures
 * from any of them count together, and once it is open none of them asks the store until the
 * probe. Each limiter applies its own `failureThreshold` and `cooldown` when it fails.
 */
export class CircuitBreaker {
  state: CircuitState = 'closed';
  /** Consecutive failures, from every limiter on the connection. */
  failures = 0;
  /** performance.now() at which an open circuit lets one probe through. */
  reopensAt = 0;
}

const breakers = new WeakMap<object, CircuitBreaker>();

/** The breaker of `store`'s connection (`Store.connection`, else the store itself). */
export function breakerOf(store: Store): CircuitBreaker {
  const owner = store.connection ?? store;
  let breaker = breakers.get(owner);
  if (breaker === undefined) {
    breaker = new CircuitBreaker();
    breakers.set(owner, breaker);
  }
  return breaker;
}

/** At most one FLOODGATE_STORE_UNAVAILABLE warning per limiter per this many ms (flapping). */
const OUTAGE_WARNING_SPACING_MS = 60_000;

/**
 * Runs store calls under the timeout and the circuit breaker. Consecutive failures past the
 * threshold open the circuit for the cooldown; then one call probes the store (half-open) while
 * the others keep getting the failure policy; its success closes the circuit.
 */
export class StoreGuard {
  /** The circuit state last reported to `onCircuitChange`. */
  private seen: CircuitState = 'closed';
  /** Calls the hooks: a hook that throws or rejects is reported once (hook-caller.ts). */
  private readonly hooks: HookCaller;
  /** The failure policy answered the last call; `warned`: and that outage was reported. */
  private outage = false;
  private warnedOutage = false;
  private lastOutageWarning = Number.NEGATIVE_INFINITY;

  constructor(
    readonly config: FailureConfig,
    private readonly breaker: CircuitBreaker = new CircuitBreaker(),
    /** Names the limiter in process warnings. */
    private readonly label = 'RateLimiter',
  ) {
    this.hooks = new HookCaller(label);
  }

  /** Current circuit state (always `closed` with `circuitBreaker: false`). */
  get circuit(): CircuitState {
    return this.config.breaker === undefined ? 'closed' : this.breaker.state;
  }

  /**
   * Milliseconds until the circuit lets the next probe reach the store: 0 while it is closed
   * (or its cooldown has passed), the cooldown while a probe is in flight. What a 503's
   * `Retry-After` should say.
   */
  nextProbeIn(): number {
    const config = this.config.breaker;
    if (config === undefined || this.breaker.state === 'closed') return 0;
    if (this.breaker.state === 'half-open') return config.cooldownMs;
    return Math.max(0, this.breaker.reopensAt - performance.now());
  }

  call<T>(operation: () => Promise<T>, context: CallContext): Promise<GuardedOutcome<T>> {
    const breaker = this.config.breaker;
    const shared = this.breaker;
    if (breaker !== undefined && shared.state !== 'closed') {
      const now = performance.now();
      if (shared.state === 'half-open' || now < shared.reopensAt) {
        this.observe();
        return Promise.resolve(
          this.unavailable({
            ok: false,
            failure: 'circuit-open',
            retryAfter: Math.max(0, shared.reopensAt - now) || breaker.cooldownMs,
          }),
        );
      }
      shared.state = 'half-open';
      this.observe();
    }
    const timeoutMs = this.config.timeoutMs;
    // Timed only when someone listens (hooks.onStoreCall): the hot path stays as it was.
    const startedAt = this.config.hooks.onStoreCall ? performance.now() : 0;
    return new Promise((resolve) => {
      let settled = false;
      const fail = (failure: 'store-error' | 'timeout', error: RateLimitStoreError): void => {
        settled = true;
        // A full Redis answers at once: no reason to stop asking it (new keys get the policy).
        if (!error.outOfMemory) this.failed();
        if (startedAt) this.timed(context, failure, startedAt);
        this.notify('onStoreError', { ...context, failure, error });
        resolve(
          this.unavailable({
            ok: false,
            failure,
            error,
            retryAfter: this.config.breaker?.cooldownMs ?? DEFAULT_CIRCUIT_COOLDOWN_MS,
          }),
        );
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
          if (startedAt) this.timed(context, 'ok', startedAt);
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
    const outcome = await withinTimeout(operation, this.config.timeoutMs);
    if (outcome.ok) return outcome.value;
    throw outcome.error;
  }

  /**
   * Calls a hook. A hook that throws, or returns a promise that rejects, is reported once as a
   * process warning and otherwise ignored: never rethrown, never an unhandled rejection.
   */
  notify<K extends keyof RateLimiterHooks>(
    name: K,
    ...args: Parameters<NonNullable<RateLimiterHooks[K]>>
  ): void {
    this.hooks.apply(this.config.hooks, name, args);
  }

  private timed(
    context: CallContext,
    outcome: 'ok' | 'store-error' | 'timeout',
    startedAt: number,
  ): void {
    this.notify('onStoreCall', { ...context, outcome, durationMs: performance.now() - startedAt });
  }

  /** Reports the first failure-policy answer of an outage (FLOODGATE_STORE_UNAVAILABLE). */
  private unavailable<O extends GuardedOutcome<never>>(outcome: O): O {
    if (this.outage) return outcome;
    this.outage = true;
    const now = performance.now();
    if (now - this.lastOutageWarning < OUTAGE_WARNING_SPACING_MS) return outcome;
    this.lastOutageWarning = now;
    this.warnedOutage = true;
    const policy = this.config.onStoreError;
    const answer =
      policy === 'open'
        ? "onStoreError 'open' admits every request"
        : policy === 'closed'
          ? "onStoreError 'closed' refuses every request"
          : 'the fallback store or limiter decides';
    emitWarning(
      'FLOODGATE_STORE_UNAVAILABLE',
      `${this.label}: ${!outcome.ok && outcome.error?.clientClosed ? "the store's Redis client was closed" : 'the store did not answer'} (${outcome.ok ? '' : outcome.failure}${failureDetail(outcome.ok ? undefined : outcome.error)}); ${answer} until it answers again (reported once per outage)`,
    );
    return outcome;
  }

  private succeeded(): void {
    const shared = this.breaker;
    shared.failures = 0;
    if (this.config.breaker !== undefined && shared.state !== 'closed') shared.state = 'closed';
    this.observe();
    if (!this.outage) return;
    this.outage = false;
    if (!this.warnedOutage) return;
    this.warnedOutage = false;
    emitWarning('FLOODGATE_STORE_RECOVERED', `${this.label}: the store answers again`);
  }

  private failed(): void {
    const breaker = this.config.breaker;
    if (breaker === undefined) return;
    const shared = this.breaker;
    shared.failures++;
    if (shared.state === 'half-open' || shared.failures >= breaker.failureThreshold) {
      shared.reopensAt = performance.now() + breaker.cooldownMs;
      shared.state = 'open';
    }
    this.observe();
  }

  /** Tells `onCircuitChange` about a state this limiter has not reported yet. */
  private observe(): void {
    const state = this.circuit;
    if (state === this.seen) return;
    this.seen = state;
    this.notify('onCircuitChange', state);
  }
}

/**
 * Runs `operation`, giving up after `timeoutMs`: its value, or the failure as a
 * RateLimitStoreError. A late answer or rejection is dropped, never left unhandled.
 */
export function withinTimeout<T>(
  operation: () => PromiseLike<T>,
  timeoutMs: number,
): Promise<{ ok: true; value: T } | { ok: false; error: RateLimitStoreError }> {
  return new Promise((resolve) => {
    let pending: PromiseLike<T> | undefined;
    const timer = setTimeout(() => {
      // A command still queued must never run once the caller has its answer.
      if (pending !== undefined) abandon(pending as Promise<T>);
      resolve({
        ok: false,
        error: new RateLimitStoreError(`the store did not answer within ${timeoutMs} ms`),
      });
    }, timeoutMs);
    try {
      pending = operation();
    } catch (error) {
      pending = Promise.reject(error);
    }
    Promise.resolve(pending).then(
      (value) => {
        clearTimeout(timer);
        resolve({ ok: true, value });
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve({ ok: false, error: asStoreError(error) });
      },
    );
  });
}

function asStoreError(error: unknown): RateLimitStoreError {
  if (error instanceof RateLimitStoreError) return error;
  return new RateLimitStoreError(
    `the store failed: ${(error as Error)?.message ?? String(error)}`,
    { cause: error },
  );
}
