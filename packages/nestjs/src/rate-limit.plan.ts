/**
 * What one request is charged: the policy sets that apply to its handler (the module's, the
 * handler's `@RateLimit` limits, each chosen per request when given as a function), minus the
 * skipped ones, each under its key and scope, merged per key. The guard charges the plan; the
 * service's `reset`/`block`/`unblock` act on the same plan.
 */
import type { Decision, Policy, RateLimiter } from '@floodgate/core';
import {
  accessDeniedProblem,
  checkAccess,
  type KeyConfig,
  resolveKey,
  UnknownAppKeyError,
} from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import { requestOf, requestView } from './rate-limit.context.js';
import { forbidden } from './rate-limit.exception.js';
import type { RateLimitCount } from './rate-limit.interfaces.js';
import { policiesOf } from './rate-limit.readers.js';
import type { RouteCharge, RouteLimit } from './rate-limit.routes.js';
import type { RateLimitService } from './rate-limit.service.js';

/** One policy set that applies to a request, as declared (names as in headers). */
export interface AppliedSet {
  readonly policies: readonly Policy[];
  readonly charge: RouteCharge;
}

/** One limiter call: the caller's key and the (scoped) policies charged under it. */
export interface KeyedCharge {
  readonly key: string;
  readonly policies: Policy[];
  readonly count: RateLimitCount;
  readonly shadow: boolean;
  /**
   * The declared sets merged into this call (scoped), so `reset(target, { policy })` resets
   * the named set alone, not the module's budget that shares its key.
   */
  readonly sets: Policy[][];
  /** Set when the charge is made. */
  limiter?: RateLimiter;
  /**
   * The decision that charged this key's policies (set when they were charged): a refund
   * whose window it went to has ended is dropped (`chargeOf` in `@floodgate/core/http`).
   */
  decision?: Decision;
  /** The store's clock when that decision was asked for: the charged window's end counts from it. */
  askedAt?: number;
}

/** Where the guard leaves a request's charges (for `reset`, `block`, `unblock`). */
export const CHARGES = Symbol.for('floodgate.nestjs.charges');

/**
 * Where the guard leaves an HTTP request's ExecutionContext before `allow`, `skip` or a
 * denial can end its work: `reset(request)` from the handler of a request that was let through
 * uncharged (an allowlisted office login) still finds the keys it would have been charged.
 */
export const CONTEXT = Symbol.for('floodgate.nestjs.context');

/** What the guard left on a request: its charges and the decision it got. */
export interface RecordedCharges {
  readonly charges: readonly KeyedCharge[];
  readonly decision: Decision;
}

/**
 * The policy sets that apply: the module's, then the handler's limits (`own` as the guard's
 * `getPolicies` answered, charged as `ownCharge` says), each without the policies
 * `@SkipRateLimit(name)` names.
 */
export async function appliedSets(
  context: ExecutionContext,
  route: RouteLimit,
  own: readonly Policy[] | undefined,
  ownCharge: RouteCharge,
): Promise<AppliedSet[]> {
  const sets: AppliedSet[] = [];
  if (route.module) {
    sets.push({ policies: await policiesFor(route.module, context), charge: route.module });
  }
  if (own !== undefined && own.length > 0) {
    sets.push({ policies: own, charge: ownCharge });
  }
  for (const charge of route.more) {
    sets.push({ policies: await policiesFor(charge, context), charge });
  }
  const skipped = route.skip === false || route.skip === true ? undefined : route.skip;
  return sets
    .map((set) =>
      skipped ? { ...set, policies: set.policies.filter((p) => !skipped.has(p.name)) } : set,
    )
    .filter((set) => set.policies.length > 0);
}

/**
 * The sets left once each limit's own lists are applied: a set whose `deny` lists the request
 * refuses it (403, before any store call), one whose `allow` lists it is dropped.
 */
export async function screenSets(
  context: ExecutionContext,
  sets: readonly AppliedSet[],
): Promise<AppliedSet[]> {
  const kept: AppliedSet[] = [];
  for (const set of sets) {
    const access = set.charge.access;
    if (access !== undefined) {
      const view = requestView(context, requestOf(context));
      const verdict = await checkAccess(
        {
          ...access,
          ipHeaders: set.charge.keys.ipHeaders,
          diagnostics: set.charge.keys.diagnostics,
        },
        view,
        context,
      );
      if (verdict === 'deny') throw await forbidden(context, accessDeniedProblem());
      if (verdict === 'allow') continue;
    }
    kept.push(set);
  }
  return kept;
}

/** A set's policies: as declared, or what its function chose for this request. */
export async function policiesFor(
  charge: RouteCharge,
  context: ExecutionContext,
): Promise<readonly Policy[]> {
  if (charge.dynamic === undefined) return charge.policies;
  return policiesOf(await charge.dynamic(context), "policies (the function's answer)");
}

/**
 * One charge per key (sets under one key share one limiter call, unless their `count` or
 * `shadow` differ), policies scoped to the route or controller.
 */
export async function keyCharges(
  service: RateLimitService,
  context: ExecutionContext,
  route: RouteLimit,
  sets: readonly AppliedSet[],
  getKey: (
    context: ExecutionContext,
    keys: KeyConfig<ExecutionContext>,
  ) => string | Promise<string>,
): Promise<KeyedCharge[]> {
  const charges: KeyedCharge[] = [];
  for (const { policies, charge } of sets) {
    // A subclass's getKey may come back empty: such requests share the fallback bucket.
    const key = (await getKey(context, charge.keys)) || charge.keys.fallbackKey;
    const scoped = policies.map((p) => service.scoped(p, charge.scope, route));
    const same = charges.find(
      (c) => c.key === key && c.count === charge.count && c.shadow === charge.shadow,
    );
    if (same) {
      for (const p of scoped) if (!same.policies.some((q) => q.id === p.id)) same.policies.push(p);
      same.sets.push(scoped);
    } else {
      const { count, shadow } = charge;
      // `policies` grows as sets merge in; `sets` keeps each set apart.
      charges.push({ key, policies: [...scoped], count, shadow, sets: [scoped] });
    }
  }
  return charges;
}

/**
 * The caller's identity under `keys`: the first key source that yields one, else the fallback
 * key. An app key that `verifyAppKey` rejected (`unknownAppKey: 'refuse'`) is a 403.
 */
export function resolveContextKey(
  context: ExecutionContext,
  keys: KeyConfig<ExecutionContext>,
): Promise<string> {
  const view = requestView(context, requestOf(context));
  return resolveKey(keys, view, context).catch(async (error: unknown) => {
    throw error instanceof UnknownAppKeyError ? await forbidden(context, error.problem) : error;
  });
}
