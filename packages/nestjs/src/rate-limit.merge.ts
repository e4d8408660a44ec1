/**
 * Several limiters' decisions as one, for a request charged under more than one key (module
 * and handler policies keyed differently).
 */
import type { Decision, PolicyDecision } from '@floodgate/core';

/**
 * Several limiters' decisions as one (the rule of the core's own): denied when any denies,
 * decided by the denying policy that waits longest (−1 first), else by the policy with the
 * least remaining (then the longest resetAfter).
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

function decides(a: PolicyDecision, b: PolicyDecision, allowed: boolean): boolean {
  if (!allowed) {
    if (a.allowed) return false;
    if (b.allowed) return true;
    if (a.retryAfter < 0 || b.retryAfter < 0) return a.retryAfter < 0 && b.retryAfter >= 0;
    return a.retryAfter > b.retryAfter;
  }
  if (a.remaining !== b.remaining) return a.remaining < b.remaining;
  return a.resetAfter > b.resetAfter;
}
