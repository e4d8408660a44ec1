/**
 * @floodgate/nestjs — RateLimitModule, `@RateLimit`, `@SkipRateLimit`, RateLimitGuard (or
 * RateLimitInterceptor) and RateLimitException: Floodgate's limiters in front of Nest
 * controllers on Express or Fastify, GraphQL resolvers and WebSocket gateways.
 */

export type { RouteLimit } from './internal/routes.js';
export {
  LoadShedderGuard,
  type LoadShedderOptions,
  loadShedder,
  ServiceOverloadedException,
} from './load-shedder.guard.js';
export { RATE_LIMIT_OPTIONS, RateLimitStore } from './rate-limit.constants.js';
export { connectionKey } from './rate-limit.context.js';
export {
  DECISION_PROPERTY,
  RateLimit,
  RateLimitDecision,
  SkipRateLimit,
} from './rate-limit.decorator.js';
export {
  FORBIDDEN,
  type RateLimitBody,
  RateLimitException,
  RateLimitForbiddenGraphQLError,
  RateLimitGraphQLError,
  TOO_MANY_REQUESTS,
} from './rate-limit.exception.js';
export { RateLimitExceptionFilter } from './rate-limit.filter.js';
export { RateLimitGuard } from './rate-limit.guard.js';
export { RateLimitInterceptor } from './rate-limit.interceptor.js';
export type {
  RateLimitAccessList,
  RateLimitCost,
  RateLimitCount,
  RateLimitDecisionView,
  RateLimitKey,
  RateLimitKeyFunction,
  RateLimitLimitOptions,
  RateLimitModuleAsyncOptions,
  RateLimitModuleFactoryOptions,
  RateLimitModuleOptions,
  RateLimitOptions,
  RateLimitOptionsFactory,
  RateLimitPoliciesOptions,
  RateLimitPolicyFunction,
  RateLimitScope,
  RateLimitTarget,
  RateLimitTargetOptions,
  RateLimitWindowOptions,
} from './rate-limit.interfaces.js';
export { RateLimitModule } from './rate-limit.module.js';
export { RATE_LIMIT_CONFIG, RateLimitService } from './rate-limit.service.js';
