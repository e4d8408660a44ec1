/**
 * `@RateLimit(...)` and `@SkipRateLimit()` on a controller or a handler (the handler's wins),
 * and `@RateLimitDecision()` to read the decision in a handler. Options are stored as given
 * and validated once, at application bootstrap, where the error can name the handler.
 */
import type { Decision } from '@floodgate/core';
import { createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { RATE_LIMIT_METADATA, SKIP_RATE_LIMIT_METADATA } from './rate-limit.constants.js';
import type { RateLimitOptions } from './rate-limit.interfaces.js';

/**
 * Limits a controller's routes or one handler: `@RateLimit({ limit: 100, window: '1m',
 * key: 'clientId' })` (one fixed window) or `@RateLimit({ policies: [...], key, cost })`.
 */
export const RateLimit = (options: RateLimitOptions): ClassDecorator & MethodDecorator =>
  SetMetadata(RATE_LIMIT_METADATA, options);

/** Exempts a controller or a handler from every rate limit (module defaults included). */
export const SkipRateLimit = (skip = true): ClassDecorator & MethodDecorator =>
  SetMetadata(SKIP_RATE_LIMIT_METADATA, skip);

/** Where the guard leaves the decision on the request (as the Express adapter does). */
export const DECISION_PROPERTY = 'rateLimit';

/** Injects the request's rate-limit Decision (undefined when the route is not limited). */
export const RateLimitDecision = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Decision | undefined =>
    context.switchToHttp().getRequest()[DECISION_PROPERTY],
);
