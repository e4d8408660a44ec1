/**
 * `policies` as a function of the request (limits per plan, tenant or API key): one RateLimiter
 * per distinct policy set, built on first use and kept in a bounded cache.
 *
 * A set's identity is its policies' ids, names and lockouts, in order, so the same plan returned
 * as new objects on every request finds its limiter, and two sets that differ in anything that
 * changes a decision never share one. Each limiter has its own denied-key cache, so a denial
 * cached under one set never answers for another; a plan change moves the key to the new set's
 * storage keys (the policy ids differ), starting from that set's state.
 */

import { fixedWindow } from '../algorithms/fixed-window.js';
import { describeValue, RateLimitArgumentError, RateLimitConfigError } from '../errors.js';
import type { Policy } from '../policy.js';
import { createRateLimiter, type RateLimiter } from '../rate-limiter.js';
import { type RateLimiterOptions, readRateLimiterOptions } from '../rate-limiter-options.js';
import { budgetOf, noteBudget } from './budget.js';
import type { Diagnostics } from './diagnostics.js';

/**
 * Most policy sets one middleware keeps a limiter for. Past it, the least recently used limiter
 * is dropped: its state lives in the store, so a set that comes back resumes where it was; only
 * the local caches (key memo, denied keys) start empty. A request in flight keeps the limiter it
 * started with. Each limiter's local caches are bounded on their own (4 MiB each at most).
 * @default 100
 */
export const POLICY_SET_CACHE_SIZE = 100;

/** `policies` as a function: a policy or a non-empty array of them, chosen per request. */
export type PoliciesFunction<Req> = (
  req: Req,
) => Policy | readonly Policy[] | Promise<Policy | readonly Policy[]>;

/** One cached set: its limiter and the budget it spends (for the double-count diagnostic). */
export interface PolicySetLimiter {
  readonly limiter: RateLimiter;
  readonly budget: string;
}

/**
 * Checks, at construction, every RateLimiter option that goes with a policies function (store,
 * prefix, hooks, …): only the policies themselves wait for a request.
 */
export function validateSetOptions(
  options: Omit<RateLimiterOptions, 'policies'>,
  where: string,
): void {
  readRateLimiterOptions({ ...options, policies: fixedWindow({ limit: 1, window: 1000 }) }, where);
}

const identities = new WeakMap<Policy, string>();

/** What makes a policy decide the way it does: id (kind, parameters, explicit name), name, lockout. */
function identityOf(policy: Policy): string {
  let identity = identities.get(policy);
  if (identity === undefined) {
    identity = `${policy.id}\u0000${policy.name}\u0000${JSON.stringify(policy.lockout ?? null)}`;
    identities.set(policy, identity);
  }
  return identity;
}

function looksLikePolicy(value: unknown): value is Policy {
  const p = value as Partial<Policy> | null;
  return (
    typeof p === 'object' &&
    p !== null &&
    typeof p.id === 'string' &&
    typeof p.name === 'string' &&
    typeof p.kind === 'string' &&
    Array.isArray(p.params)
  );
}

/** The limiters of one middleware's policies function, by policy set. */
export class PolicySets<Req> {
  private readonly cache = new Map<string, PolicySetLimiter>();
  /** Limiters built so far, up to POLICY_SET_CACHE_SIZE (see `build`). */
  private noted = 0;

  constructor(
    private readonly policies: PoliciesFunction<Req>,
    /** Every RateLimiter option but `policies` (store, prefix, hooks, …). */
    private readonly base: Omit<RateLimiterOptions, 'policies'>,
    private readonly where: string,
    private readonly diagnostics: Diagnostics,
  ) {}

  /** Limiters currently cached (at most POLICY_SET_CACHE_SIZE). */
  get size(): number {
    return this.cache.size;
  }

  /**
   * The limiter for `req`'s policy set. A function that throws, rejects or returns anything but
   * a policy or a non-empty array of policies (or a set no RateLimiter accepts, e.g. two
   * policies with one name) fails with RateLimitArgumentError (`argument: 'policies'`, the
   * original error as `cause`), which the adapters hand to the framework's error handling.
   */
  async limiterFor(req: Req): Promise<PolicySetLimiter> {
    let value: unknown;
    try {
      value = await this.policies(req);
    } catch (error) {
      throw argumentError(undefined, `the policies function threw (${String(error)})`, error);
    }
    const list: readonly unknown[] = Array.isArray(value) ? value : [value];
    if (list.length === 0 || !list.every(looksLikePolicy)) {
      throw argumentError(value, `the policies function returned ${describeValue(value)}`);
    }
    const policies = list as readonly Policy[];
    const identity =
      policies.length === 1 ? identityOf(policies[0]!) : policies.map(identityOf).join('\u0001');
    const cached = this.cache.get(identity);
    if (cached !== undefined) {
      // Most recently used last: Map keeps insertion order.
      this.cache.delete(identity);
      this.cache.set(identity, cached);
      return cached;
    }
    return this.build(identity, policies);
  }

  /** Drops `key` from every cached limiter's denied-key cache (after a reset). */
  forget(key: string): void {
    for (const { limiter } of this.cache.values()) limiter.deniedCache?.forget(key);
  }

  private build(identity: string, policies: readonly Policy[]): PolicySetLimiter {
    let limiter: RateLimiter;
    try {
      limiter = createRateLimiter(
        { ...this.base, policies } as RateLimiterOptions,
        `${this.where}.policies(req)`,
      );
    } catch (error) {
      if (!(error instanceof RateLimitConfigError)) throw error;
      throw argumentError(policies, error.message, error);
    }
    // The middleware, not each limiter, is the budget's owner: a set rebuilt after eviction is
    // not "another middleware" spending the same budget. The shared-budget diagnostic keeps one
    // entry per budget for the process's life, so only the first sets are noted: per-tenant
    // limits must not grow it without bound.
    if (this.noted < POLICY_SET_CACHE_SIZE) {
      this.noted++;
      noteBudget(this.diagnostics, limiter, this.where, this);
    }
    const entry: PolicySetLimiter = { limiter, budget: budgetOf(limiter) };
    if (this.cache.size >= POLICY_SET_CACHE_SIZE) {
      this.cache.delete(this.cache.keys().next().value as string);
    }
    this.cache.set(identity, entry);
    return entry;
  }
}

function argumentError(value: unknown, what: string, cause?: unknown): RateLimitArgumentError {
  const error = new RateLimitArgumentError(
    'policies',
    value,
    `${what}; expected a policy or a non-empty array of policies, e.g. fixedWindow({ limit: 100, window: '1m' })`,
  );
  if (cause !== undefined)
    Object.defineProperty(error, 'cause', { value: cause, configurable: true });
  return error;
}
