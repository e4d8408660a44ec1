/** When the window an admitted charge went to ends: refunds after it are dropped (count, settle). */
import type { Clock } from './clock.js';
import type { Decision } from './decision.js';
import type { Policy } from './policy.js';

/**
 * When the first window a charge went to ends (`decision` is the charging one), on `clock`:
 * for a fixed window its end, for a sliding window the end of the sub-window (bucket) it was
 * charged to, for a sliding log the moment its entry leaves the log. Those kinds give a refund
 * back to the *current* window or bucket (a sliding log: its newest entries): once the charged
 * one has ended, a refund would hand a later one a unit it never held (an attacker holding slow
 * successes across the edge would double its failures), so it is dropped, as
 * express-rate-limit never decrements once a key's resetTime has passed. Dropping is safe (the
 * charge stays, an under-refund); the bucket kinds and GCRA refund against the time now and
 * can never give back more than was taken, so they have no end. `askedAt`, when given, is the
 * clock's reading when the charging call was made.
 */
export function chargedWindowEnd(
  limiter: { readonly policies: readonly Policy[] },
  decision: Decision,
  clock: Clock,
  askedAt?: number,
): number | undefined {
  let left: number | undefined;
  limiter.policies.forEach((policy, i) => {
    const after = windowLeft(policy, decision.policies[i]?.resetAfter);
    if (after !== undefined && (left === undefined || after < left)) left = after;
  });
  if (left === undefined) return undefined;
  // `resetAfter` counts from the moment the store decided, which lies between the call and its
  // reply. From the call (`askedAt`) the end is never late: a reply processed after a stall
  // (a busy event loop) would otherwise push the end past the edge, and the refund would go to
  // the next window. Early only by the round trip: a refund dropped, never one too many.
  return (askedAt ?? clock()) + left;
}

/** How long (ms) the window or bucket an admitted charge went to still runs, if it has one. */
function windowLeft(policy: Policy, resetAfter: number | undefined): number | undefined {
  if (resetAfter === undefined) return undefined;
  if (policy.kind === 'fixed-window') return resetAfter;
  if (policy.kind === 'sliding-log') return policy.window;
  if (policy.kind !== 'sliding-window') return undefined;
  // An admitted charge's resetAfter is when its bucket leaves the window, buckets − 1 buckets
  // after that bucket ends (params: limit, bucket size in µs, buckets).
  const [, size = 0, buckets = 1] = policy.params;
  return resetAfter - ((buckets - 1) * size) / 1000;
}
