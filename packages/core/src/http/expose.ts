/** Where a request keeps the decisions of the rate limiters it passed through. */
import type { Decision } from '../decision.js';

/**
 * The request (Express, Fastify) or `ctx.state` (Koa) a middleware exposes its decision on:
 * `rateLimit` is the last limiter's decision; once a second limiter has decided the request,
 * `rateLimits` holds every limiter's decision, in the order they ran (stacked limiters append,
 * as their headers do).
 */
export interface DecisionHolder {
  rateLimit?: Decision;
  rateLimits?: Decision[];
}

/**
 * Exposes `decision` on `holder`. A request seen by one limiter (nearly all) gets one property:
 * on Express 5 every property added to a request costs ~1–2 µs (docs/benchmarks.md), so the
 * list is made only when a second limiter decides.
 */
export function exposeDecision(holder: DecisionHolder, decision: Decision): void {
  const previous = holder.rateLimit;
  if (previous !== undefined) {
    if (holder.rateLimits === undefined) holder.rateLimits = [previous, decision];
    else holder.rateLimits.push(decision);
  }
  holder.rateLimit = decision;
}
