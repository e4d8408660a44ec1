/** A reservation: the Decision of `limiter.reserve`, settled once the real cost is known. */
import { chargedWindowEnd } from './charged-window.js';
import type { Clock } from './clock.js';
import type { Decision } from './decision.js';
import { RateLimitArgumentError, RateLimitConfigError } from './errors.js';
import type { Policy } from './policy.js';
import type { PreparedPolicies } from './stores/store.js';

/**
 * The answer to `limiter.reserve(key, { cost: estimate })`: its Decision, plus `settle` and
 * `cancel`. When the reservation was admitted, `settle(actual)` makes one atomic store call that
 * refunds `estimate − actual` (as `refund` does: within the charge's window only) or charges
 * `actual − estimate` even past the limit (as `penalize` does: the key may go into debt);
 * `cancel()` gives the whole estimate back. A refund once the charge's window (fixedWindow,
 * slidingWindow) has ended gives nothing back and answers a read. The first of them to be called is the only one that
 * does anything: later calls answer its result. A reservation that is never settled stays
 * charged at its estimate. When it was denied, both do nothing and answer the denial.
 *
 * @example
 * ```ts
 * import { memoryStore, RateLimiter, tokenBucket } from '@floodgate/core';
 *
 * const limiter = new RateLimiter({
 *   store: memoryStore(),
 *   policies: tokenBucket({ limit: 10_000, window: '1m', name: 'tokens' }),
 * });
 * const r = await limiter.reserve('user-1', { cost: 500 });
 * if (r.allowed) {
 *   const used = 730; // known only after the work
 *   await r.settle(used);
 * }
 * ```
 */
export interface Reservation extends Decision {
  /** Settles at the real cost: refunds the difference or charges the overrun (into debt). */
  settle(actual: number): Promise<Decision>;
  /** Gives the whole reservation back. */
  cancel(): Promise<Decision>;
}

/** What a reservation asks of its limiter (a RateLimiter) to settle. */
export interface Settler {
  readonly policies: readonly Policy[];
  readonly store: { readonly kind: string; readonly clock?: Clock };
  penalize(key: string, options: { cost: number }): Promise<Decision>;
  refund(key: string, options: { cost: number }): Promise<Decision>;
  peek(key: string, options: { cost: number }): Promise<Decision>;
}

/** Reads `settle`'s argument: a non-negative safe integer. */
function readActual(actual: unknown): number {
  if (typeof actual !== 'number' || !Number.isSafeInteger(actual) || actual < 0) {
    throw new RateLimitArgumentError(
      'actual',
      actual,
      `settle(actual) takes a non-negative integer cost, got ${String(actual)}`,
    );
  }
  return actual;
}

/** Reasons of a decision the failure policy answered without the store (headers.ts `storeDecided`). */
const UNCHARGED: ReadonlySet<string> = new Set(['store-error', 'timeout', 'circuit-open']);

/** `decision` as a Reservation of `estimate` units of `key`, settled through `limiter`. */
export function toReservation(
  decision: Decision,
  estimate: number,
  key: string,
  limiter: Settler,
): Reservation {
  let done: Promise<Decision> | undefined;
  // A refund after the charge's window (fixedWindow, slidingWindow) has ended would give a later
  // window units it never held: it is dropped, as the adapters' `count` drops it.
  // A reservation the failure policy admitted (the store failed) may never have been charged: a
  // refund would give back units other requests paid for, so none is made (overruns are).
  const clock = limiter.store.clock ?? Date.now;
  const windowEndsAt = decision.allowed ? chargedWindowEnd(limiter, decision, clock) : undefined;
  const uncharged = decision.reason !== undefined && UNCHARGED.has(decision.reason);
  const refund = (cost: number): Promise<Decision> =>
    uncharged || (windowEndsAt !== undefined && clock() >= windowEndsAt)
      ? limiter.peek(key, { cost: 0 })
      : limiter.refund(key, { cost });
  const once = (settle: () => Promise<Decision>): Promise<Decision> => {
    done ??= decision.allowed ? settle() : Promise.resolve(decision);
    return done;
  };
  return {
    ...decision,
    settle(actual: number): Promise<Decision> {
      let cost: number;
      try {
        cost = readActual(actual);
      } catch (error) {
        return Promise.reject(error);
      }
      return once(() => {
        if (cost > estimate) return limiter.penalize(key, { cost: cost - estimate });
        if (cost < estimate) return refund(estimate - cost);
        return Promise.resolve(decision);
      });
    },
    cancel(): Promise<Decision> {
      return once(() => (estimate > 0 ? refund(estimate) : Promise.resolve(decision)));
    },
  };
}

/** Policy kinds whose state can carry debt (docs/algorithms.md#debt): `reserve` and `penalize`. */
const DEBT_KINDS: ReadonlySet<string> = new Set([
  'token-bucket',
  'gcra',
  'fixed-window',
  'sliding-window',
  'smooth-bursty',
  'smooth-warming-up',
]);

/** The index of the first policy that cannot carry debt (slidingLog, leakyBucket), or −1. */
export function withoutDebt(policies: readonly Policy[]): number {
  return policies.findIndex((p) => !DEBT_KINDS.has(p.kind));
}

/**
 * Refuses `call` (`reserve`, `penalize`) with `FLOODGATE_NO_DEBT` when a policy cannot carry
 * debt (slidingLog, leakyBucket) or the store cannot charge past the limit.
 */
export function assertDebt(
  { policies, store }: Pick<Settler, 'policies' | 'store'>,
  prepared: PreparedPolicies,
  call: string,
): void {
  const storeKind = store.kind;
  const i = withoutDebt(policies);
  if (i >= 0) {
    const kind = policies[i]!.kind;
    throw new RateLimitConfigError(
      'FLOODGATE_NO_DEBT',
      `policies[${i}]`,
      kind,
      `${call}() needs policies that can carry debt; policies[${i}] is ${kind}, which cannot (docs/algorithms.md#debt): use tokenBucket, gcra, fixedWindow, slidingWindow or a smooth policy`,
    );
  }
  if (prepared.charge === undefined) {
    throw new RateLimitConfigError(
      'FLOODGATE_NO_DEBT',
      'store',
      storeKind,
      `${call}() needs a store that can charge past the limit; the ${storeKind} store cannot`,
    );
  }
}
