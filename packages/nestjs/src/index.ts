/**
 * @floodgate/nestjs — RateLimitModule, `@RateLimit`, `@SkipRateLimit`, RateLimitGuard and
 * RateLimitException: Floodgate's limiters in front of Nest controllers, on Express or Fastify.
 */
export { RATE_LIMIT_OPTIONS, RateLimitStore } from './rate-limit.constants.js';
export {
  DECISION_PROPERTY,
  RateLimit,
  RateLimitDecision,
  SkipRateLimit,
} from './rate-limit.decorator.js';
export { RateLimitException } from './rate-limit.exception.js';
export { RateLimitExceptionFilter } from './rate-limit.filter.js';
export { RateLimitGuard } from './rate-limit.guard.js';
export type {
  RateLimitCost,
  RateLimitKey,
  RateLimitKeyFunction,
  RateLimitModuleAsyncOptions,
  RateLimitModuleFactoryOptions,
  RateLimitModuleOptions,
  RateLimitOptions,
  RateLimitOptionsFactory,
  RateLimitPoliciesOptions,
  RateLimitWindowOptions,
} from './rate-limit.interfaces.js';
export { RateLimitModule } from './rate-limit.module.js';
export { RATE_LIMIT_CONFIG, RateLimitService, type RouteLimit } from './rate-limit.service.js';
