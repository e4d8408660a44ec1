/**
 * A limiter's side of its quota leases (QuotaLeases' LeaseSeam): the lease take, give-backs and
 * plain decisions go through the limiter's store guard (timeout, circuit breaker, failure
 * policy) like every store call.
 */
import { type Clock, processClock, readMicros } from '../clock.js';
import { toDecision } from '../decision.js';
import { RateLimitConfigError } from '../errors.js';
import type { FailureAnswer } from '../failure-policy.js';
import type { Policy } from '../policy.js';
import type { StoreGuard } from '../store-guard.js';
import type { PreparedPolicies, Store } from '../stores/store.js';
import type { LeaseSeam } from './quota-leases.js';

/** What the seam reads of its limiter. */
export interface LeasingLimiter {
  readonly store: Store;
  readonly policies: readonly Policy[];
  storageKeys(key: string): string[];
}

/** The seam of `limiter`'s leases; FLOODGATE_NO_LEASE when its store cannot take leases. */
export function leaseSeam(
  limiter: LeasingLimiter,
  prepared: PreparedPolicies,
  guard: StoreGuard,
  failure: FailureAnswer,
  field: string,
): LeaseSeam {
  const take = prepared.take;
  if (take === undefined) {
    throw new RateLimitConfigError(
      'FLOODGATE_NO_LEASE',
      field,
      limiter.store.kind,
      `${field}: the ${limiter.store.kind} store cannot take leases`,
    );
  }
  const policies = limiter.policies;
  const clock: Clock = (limiter.store as { clock?: Clock }).clock ?? processClock;
  return {
    take: async (key, want) => {
      const context = { key, cost: want, peek: false };
      const keys = limiter.storageKeys(key);
      const outcome = await guard.call(() => take(keys, want), context);
      if (outcome.ok) return { taken: outcome.value };
      return { failed: await failure.answer({ key, cost: 1, peek: false }, outcome) };
    },
    giveBack: async (key, units) => {
      const keys = limiter.storageKeys(key);
      // A failure leaves the units charged: under-admission, never over-admission.
      await guard.call(() => prepared.refund(keys, units), { key, cost: 0, peek: true });
    },
    plain: async (key, cost) => {
      const context = { key, cost, peek: false };
      const keys = limiter.storageKeys(key);
      const outcome = await guard.call(() => prepared.decide(keys, cost, false), context);
      return outcome.ok ? toDecision(outcome.value, policies) : failure.answer(context, outcome);
    },
    decision: (taken) => toDecision(taken, policies),
    now: () => readMicros(clock),
  };
}
