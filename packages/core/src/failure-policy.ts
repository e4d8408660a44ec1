/**
 * What a RateLimiter does when its store cannot answer: every call is bounded by a timeout, a
 * circuit breaker stops asking a store that keeps failing (both run by StoreGuard,
 * store-guard.ts), and the failure policy (`open`, `closed`, or a fallback store/limiter)
 * answers instead (FailureAnswer, here; the options it reads are in failure-options.ts).
 * Outcomes stay data: the decision's `reason` says what happened and hooks let operators count it.
 */
import { type Decision, toDecision } from './decision.js';
import {
  type CallContext,
  DEFAULT_STORE_TIMEOUT_MS,
  type FallbackLimiter,
  type OnStoreError,
  type StoreFailure,
} from './failure-options.js';
import { keyTails } from './keys.js';
import type { Policy } from './policy.js';
import { type GuardedOutcome, withinTimeout } from './store-guard.js';
import type { PreparedPolicies } from './stores/store.js';

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

  /** Forgets every key of the limiter in the fallback store too (a limiter's `resetAll`). */
  async resetAll(head: string): Promise<void> {
    await this.fallbackStore?.resetAll?.(head, this.fallbackTails);
  }

  /** Refunds, blocks and unblocks reach the fallback store too (it may answer later calls). */
  async refund(key: string, cost: number): Promise<void> {
    if (this.fallbackStore) {
      await this.fallbackStore.refund(this.keysOf(key), cost).catch(() => undefined);
    }
  }

  /** Charges (penalize, a settle's overrun) reach the fallback store too. */
  async charge(key: string, cost: number): Promise<void> {
    const charge = this.fallbackStore?.charge;
    if (charge !== undefined) {
      await charge(this.keysOf(key), cost).catch(() => undefined);
    }
  }

  /** A `set` reaches the fallback store too. */
  async set(key: string, used: number): Promise<void> {
    const set = this.fallbackStore?.set;
    if (set !== undefined) {
      await set(this.keysOf(key), used).catch(() => undefined);
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
