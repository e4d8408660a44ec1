/**
 * Shadow mode (`shadow: true`): the middleware counts every request as it would when enforcing
 * (same store writes, same leases, same blocks and lockouts) but never refuses one: no 429, no
 * `onLimited`, no shaping delay. Every decision it exposes (`req.rateLimit`,
 * `ctx.state.rateLimit`, the `onDecision` hook) carries `shadow: true`, so would-be denials can
 * be measured (the OpenTelemetry outcome `shadow-denied`) before the limits are enforced.
 * Headers are off unless `headers` is given; a would-be denial never sends `Retry-After`.
 */
import type { Decision } from '../decision.js';
import type { CallContext, RateLimiterHooks } from '../failure-options.js';
import { HookCaller } from '../hook-caller.js';
import { configError } from '../options.js';
import type { HttpCheck } from './types.js';

/** Reads the `shadow` option. @default false */
export function parseShadowOption(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw configError(field, value, 'true or false');
  return value;
}

/** `decision` marked as decided in shadow mode. */
export function shadowDecision<D extends Decision>(decision: D): D {
  return { ...decision, shadow: true };
}

/** `check` with every decision in it marked `shadow: true`. */
export function shadowCheck(check: HttpCheck): HttpCheck {
  return {
    ...check,
    decision: shadowDecision(check.decision),
    rate: check.rate && shadowDecision(check.rate),
    concurrency: check.concurrency && shadowDecision(check.concurrency),
  };
}

/**
 * The limiter's hooks for a shadow middleware: `onDecision` sees the decision and its context
 * with `shadow: true`. Anything but an object of hooks is returned as is, for the RateLimiter to
 * report.
 */
export function shadowHooks(hooks: unknown): unknown {
  const own = hooks as RateLimiterHooks | undefined;
  if (own === null || typeof own !== 'object' || typeof own.onDecision !== 'function') return hooks;
  // The user's hook may be async: its rejection is caught here, as the limiter's own would be.
  const caller = new HookCaller('shadow middleware');
  return {
    ...own,
    onDecision(decision: Decision, context: CallContext) {
      caller.call(own, 'onDecision', shadowDecision(decision), { ...context, shadow: true });
    },
  };
}
