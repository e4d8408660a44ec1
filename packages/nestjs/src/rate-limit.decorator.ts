/**
 * `@RateLimit(...)` and `@SkipRateLimit()` on a controller, resolver or gateway class or on a
 * handler (the handler's wins), and `@RateLimitDecision()` to read the decision in a handler.
 * Options are stored as given and validated once, at application bootstrap, where the error
 * can name the handler.
 */
import { type Decision } from '@floodgate/core';
import { createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { RATE_LIMIT_METADATA, SKIP_RATE_LIMIT_METADATA } from './rate-limit.constants.js';
import { requestOf } from './rate-limit.context.js';
import type { RateLimitOptions } from './rate-limit.interfaces.js';

/**
 * Limits a class's handlers or one handler: `@RateLimit({ limit: 100, window: '1m',
 * key: 'clientId' })` (one fixed window) or `@RateLimit({ policies: [...], key, cost, scope })`.
 * The module's `policies` apply too, unless `override: true`.
 */
export const RateLimit = (options: RateLimitOptions): ClassDecorator & MethodDecorator =>
  SetMetadata(RATE_LIMIT_METADATA, options);

/**
 * `@SkipRateLimit()` exempts a class or a handler from every limit (module policies included);
 * `@SkipRateLimit('burst', 'daily')` from the policies of those names only (an unknown name
 * fails bootstrap); `@SkipRateLimit(false)` on a handler undoes its class's skip.
 */
export function SkipRateLimit(
  skip: boolean | string = true,
  ...names: string[]
): ClassDecorator & MethodDecorator {
  return SetMetadata(SKIP_RATE_LIMIT_METADATA, typeof skip === 'string' ? [skip, ...names] : skip);
}

/** Where the guard leaves the decision on the request (as the Express adapter does). */
export const DECISION_PROPERTY = 'rateLimit';

/**
 * Injects the request's rate-limit Decision (undefined when the handler is not limited); in
 * GraphQL resolvers it is the decision of the GraphQL context's request.
 */
export const RateLimitDecision = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Decision | undefined =>
    requestOf(context)[DECISION_PROPERTY] as Decision | undefined,
);
