/**
 * StoreGuard: runs every store call of a limiter under its timeout and circuit breaker, and
 * turns the outcome into data (`GuardedOutcome`) for the failure policy to answer. Nothing here
 * ever throws into the caller or leaves a rejection unhandled.
 */
import { emitWarning, RateLimitStoreError } from './errors.js';
import {
  type CallContext,
  type CircuitState,
  DEFAULT_CIRCUIT_COOLDOWN_MS,
  type FailureConfig,
  type RateLimiterHooks,
  type StoreFailure,
} from './failure-policy.js';
import { abandon } from './stores/send-ticket.js';

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
      emitWarning(
        'FLOODGATE_HOOK_ERROR',
        `RateLimiter hooks.${name} threw (further hook errors are ignored): ${(error as Error)?.message ?? error}`,
      );
    }
  }

  private timed(
    context: CallContext,
    outcome: 'ok' | 'store-error' | 'timeout',
    startedAt: number,
  ): void {
    this.notify('onStoreCall', { ...context, outcome, durationMs: performance.now() - startedAt });
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
