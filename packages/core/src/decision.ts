/**
 * Decisions are data: every call answers with one, admitted or not. Times are milliseconds
 * (fractions carry microsecond precision).
 */
import type { StoredLimits } from './live-limits.js';
import type { Policy } from './policy.js';

/** Why a decision came out the way it did, when it was not the policies' own verdict. */
export type DecisionReason =
  /** The memory store was full of live keys and could not track a new one. */
  | 'store-full'
  /** The store failed (error, lost connection); `onStoreError` 'open'/'closed' answered. */
  | 'store-error'
  /** The store did not answer within the limiter's `timeout`; 'open'/'closed' answered. */
  | 'timeout'
  /** The circuit breaker is open: the store was not asked; 'open'/'closed' answered. */
  | 'circuit-open'
  /** The store failed (any of the above) and the fallback store or limiter decided. */
  | 'fallback'
  /**
   * The key is blocked (a policy's `blockDuration` lockout, or `limiter.block`): nothing was
   * read or charged; `policy` names the blocking policy and `retryAfter` is the time left
   * (−1: blocked for ever).
   */
  | 'blocked'
  /**
   * The key is blocked by the limiter's `ban` (denied `ban.after` times within `ban.window`):
   * as 'blocked', and the HTTP adapters answer 403 instead of 429.
   */
  | 'banned'
  /**
   * `acquire` only: `maxQueueSize` calls were already waiting on the key in this process, so
   * this one was refused at once (the other fields are a read of the key as it stood).
   */
  | 'queue-full'
  /** Overload protection (`adaptiveConcurrency`): the request's class had no room under the limit. */
  | 'overloaded'
  /** Overload protection: the event loop was too busy for the request's class. */
  | 'event-loop';

/** One policy's view of a request. */
export interface PolicyDecision {
  /** The policy's name (headers use it). */
  readonly name: string;
  /** Whether this policy alone would admit the request. */
  readonly allowed: boolean;
  /** Capacity: cost-1 requests a fully idle key admits back to back. */
  readonly limit: number;
  /**
   * The policy's `limit` option: units per `window`, the sustained rate (what `RateLimit-Policy`
   * advertises as `q`). Equals `limit` except where a burst sets the capacity (tokenBucket, gcra,
   * leakyBucket).
   */
  readonly quota: number;
  /** Cost-1 requests that would still be admitted now. */
  readonly remaining: number;
  /** Milliseconds until the key is back to full capacity. */
  readonly resetAfter: number;
  /** 0 when allowed; ms until this cost would be admitted; −1 when it never can be. */
  readonly retryAfter: number;
  /** Milliseconds an admitted request should be held back (shaping); 0 otherwise. */
  readonly delay: number;
  /** The policy's window in milliseconds. */
  readonly window: number;
}

/** The answer to `consume`, `peek` and `acquire`. */
export interface Decision extends Omit<PolicyDecision, 'name'> {
  /**
   * Name of the policy that decided: when denied, the denying policy that waits longest (−1
   * first); when admitted, the one with the least remaining (then the longest resetAfter).
   */
  readonly policy: string;
  /** Every policy's view, in the limiter's order. */
  readonly policies: readonly PolicyDecision[];
  readonly reason?: DecisionReason;
  /**
   * Set by an HTTP middleware in shadow mode (`shadow: true`): counted, but never enforced, so
   * `allowed: false` is a would-be denial.
   */
  readonly shadow?: boolean;
}

/** What a store answers, in integer microseconds; the limiter turns it into a Decision. */
export interface StoreResult {
  readonly allowed: boolean;
  readonly remaining: number;
  readonly resetAfter: number;
  readonly retryAfter: number;
  readonly delay: number;
}

export interface StoreDecision {
  /** Every policy admitted (and, for consume, every policy was charged). */
  readonly admitted: boolean;
  readonly results: readonly StoreResult[];
  readonly reason?: DecisionReason;
  /** The key is blocked: `results` is empty and every policy answers this. */
  readonly blocked?: Block;
  /**
   * The policies as this key's live limits made them (RateLimiter `liveLimits`), when an
   * override applied: the limiter describes the decision with their parameters.
   */
  readonly policies?: readonly Policy[];
  /** The key's live limits as the store read them in the same call (overrides only). */
  readonly live?: StoredLimits;
}

/** A block as a store reports it. */
export interface Block {
  /** The policy whose lockout blocked the key (its index), or −1 for a block by hand. */
  readonly by: number;
  /** µs until the block ends; −1: for ever. */
  readonly left: number;
}

/**
 * The decision of a blocked key: every policy denied with the block's time left (for ever:
 * −1), the blocking policy (for a block by hand, the first) speaking for it.
 */
function blockedDecision(block: Block, policies: readonly Policy[]): Decision {
  const left = block.left < 0 ? -1 : block.left / 1000;
  const views: PolicyDecision[] = policies.map((p) => ({
    name: p.name,
    allowed: false,
    limit: p.capacity,
    remaining: 0,
    resetAfter: left,
    retryAfter: left,
    delay: 0,
    window: p.window,
    quota: p.limit,
  }));
  const d = views[Math.max(block.by, 0)] ?? views[0]!;
  return {
    allowed: false,
    limit: d.limit,
    remaining: 0,
    resetAfter: left,
    retryAfter: left,
    delay: 0,
    window: d.window,
    quota: d.quota,
    policy: d.name,
    policies: views,
    reason: 'blocked',
  };
}

/** Builds the public Decision from a store's answer. */
export function toDecision(answer: StoreDecision, limiterPolicies: readonly Policy[]): Decision {
  // A key with live limits is decided (and described) with its overrides' parameters.
  const policies = answer.policies ?? limiterPolicies;
  if (answer.blocked !== undefined) return blockedDecision(answer.blocked, policies);
  if (policies.length === 1) return toSingleDecision(answer, policies[0]!);
  const views: PolicyDecision[] = new Array(policies.length);
  let decider = 0;
  for (let i = 0; i < policies.length; i++) {
    const r = answer.results[i]!;
    const p = policies[i]!;
    views[i] = {
      name: p.name,
      allowed: r.allowed,
      limit: p.capacity,
      quota: p.limit,
      remaining: r.remaining,
      resetAfter: r.resetAfter / 1000,
      retryAfter: r.retryAfter < 0 ? -1 : r.retryAfter / 1000,
      delay: r.delay / 1000,
      window: p.window,
    };
    if (i > 0 && decides(views[i]!, views[decider]!, answer.admitted)) decider = i;
  }
  const d = views[decider]!;
  let delay = 0;
  if (answer.admitted) for (const v of views) delay = Math.max(delay, v.delay);
  return {
    allowed: answer.admitted,
    limit: d.limit,
    quota: d.quota,
    remaining: d.remaining,
    resetAfter: d.resetAfter,
    retryAfter: answer.admitted ? 0 : d.retryAfter,
    delay,
    window: d.window,
    policy: d.name,
    policies: views,
    ...(answer.reason ? { reason: answer.reason } : {}),
  };
}

/**
 * `toDecision` for a limiter of one policy (the common case): that policy decides, so the
 * decision is its view plus `policy` and `policies`, built without the search above.
 */
function toSingleDecision(answer: StoreDecision, p: Policy): Decision {
  const r = answer.results[0]!;
  const allowed = answer.admitted;
  const resetAfter = r.resetAfter / 1000;
  const retryAfter = r.retryAfter < 0 ? -1 : r.retryAfter / 1000;
  const delay = r.delay / 1000;
  const view: PolicyDecision = {
    name: p.name,
    allowed: r.allowed,
    limit: p.capacity,
    quota: p.limit,
    remaining: r.remaining,
    resetAfter,
    retryAfter,
    delay,
    window: p.window,
  };
  const decision: Decision = {
    allowed,
    limit: p.capacity,
    quota: p.limit,
    remaining: r.remaining,
    resetAfter,
    retryAfter: allowed ? 0 : retryAfter,
    delay: allowed ? delay : 0,
    window: p.window,
    policy: p.name,
    policies: [view],
  };
  return answer.reason ? { ...decision, reason: answer.reason } : decision;
}

/**
 * Several limiters' decisions as one (a request charged under more than one key): denied when
 * any denies, and the policy that decides is chosen by the same rule as within one limiter.
 * Reasons and delays carry over: the first reason given, the longest delay when admitted.
 */
export function mergeDecisions(decisions: readonly Decision[]): Decision {
  const views: PolicyDecision[] = decisions.flatMap((d) => d.policies);
  const allowed = decisions.every((d) => d.allowed);
  let decider = views[0]!;
  for (const v of views.slice(1)) if (decides(v, decider, allowed)) decider = v;
  const reason = decisions.find((d) => d.reason !== undefined)?.reason;
  const { name, ...view } = decider;
  return {
    ...view,
    allowed,
    retryAfter: allowed ? 0 : decider.retryAfter,
    delay: allowed ? Math.max(...decisions.map((d) => d.delay)) : 0,
    policy: name,
    policies: views,
    ...(reason ? { reason } : {}),
  };
}

/**
 * Which policy decides: whether `candidate` should speak for the decision instead of `current`.
 * Admitted: the least remaining, then the longest resetAfter. Denied: a denying policy, the one
 * that waits longest, −1 (never) longest of all.
 */
function decides(candidate: PolicyDecision, current: PolicyDecision, admitted: boolean): boolean {
  // Admitted: the tightest policy speaks; on a tie, the one that takes longer to recover.
  if (admitted) {
    return (
      candidate.remaining < current.remaining ||
      (candidate.remaining === current.remaining && candidate.resetAfter > current.resetAfter)
    );
  }
  if (candidate.allowed) return false;
  if (current.allowed) return true;
  // Among denials the one that waits longest decides; −1 (never) waits longest of all.
  if (current.retryAfter < 0) return false;
  return candidate.retryAfter < 0 || candidate.retryAfter > current.retryAfter;
}
