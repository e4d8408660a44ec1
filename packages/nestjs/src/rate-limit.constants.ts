/**
 * Injection tokens and metadata keys. The store token shares its name with the type it
 * provides, as nestjs/throttler does with `ThrottlerStorage`:
 * `constructor(@Inject(RateLimitStore) store: RateLimitStore)`.
 */
import { type Store } from '@floodgate/core';

/** The store every limiter of the module uses (`memoryStore()`, `redisStore({ client })`). */
export type RateLimitStore = Store;
/** Injection token of the module's store. */
export const RateLimitStore: unique symbol = Symbol('RateLimitStore');

/** Injection token of the options given to `forRoot` or returned by `forRootAsync`. */
export const RATE_LIMIT_OPTIONS: unique symbol = Symbol('RATE_LIMIT_OPTIONS');

/** Metadata key of `@RateLimit(...)`. */
export const RATE_LIMIT_METADATA = 'floodgate:rate-limit';
/** Metadata key of `@SkipRateLimit()`. */
export const SKIP_RATE_LIMIT_METADATA = 'floodgate:skip-rate-limit';

/** Injection token: whether the module registered RateLimitGuard as a global guard. */
export const RATE_LIMIT_GLOBAL: unique symbol = Symbol('RATE_LIMIT_GLOBAL');

/** Static mark of RateLimitGuard and its subclasses (found on `@UseGuards` metadata). */
export const RATE_LIMIT_GUARD_MARK: unique symbol = Symbol.for('floodgate.nestjs.guard');
