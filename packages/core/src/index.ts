/**
 * @floodgate/core — rate limiting that decides in one round trip, in Redis (Lua) or in
 * memory (the TypeScript twins), with the same answers from both.
 *
 * This entry is the documented API only (what the docs describe): the limiters, the policy
 * factories, the stores, their option and decision types, and the errors. The helpers the framework
 * adapters share live at `@floodgate/core/http`; engine internals are not exported.
 * `test/meta/exports.test.ts` lists every name, so adding one is a decision.
 */
export type { FixedWindowOptions } from './algorithms/fixed-window.js';
export type { GcraOptions } from './algorithms/gcra.js';
export {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from './algorithms/index.js';
export type { LeakyBucketOptions } from './algorithms/leaky-bucket.js';
export type { SlidingLogOptions } from './algorithms/sliding-log.js';
export type { SlidingWindowOptions } from './algorithms/sliding-window.js';
export type { SmoothBurstyOptions } from './algorithms/smooth-bursty.js';
export type { SmoothWarmingUpOptions } from './algorithms/smooth-warming-up.js';
export type { TokenBucketOptions } from './algorithms/token-bucket.js';
export type { Clock } from './clock.js';
export {
  type ConcurrencyAcquireOptions,
  type ConcurrencyDecision,
  ConcurrencyLimiter,
  type ConcurrencyLimiterOptions,
  type Lease,
} from './concurrency-limiter.js';
export type { Decision, DecisionReason, PolicyDecision } from './decision.js';
export type { DeniedCacheOptions } from './denied-cache.js';
export type { Duration } from './duration.js';
export {
  RateLimitArgumentError,
  RateLimitConfigError,
  type RateLimitConfigErrorCode,
  RateLimitStoreError,
} from './errors.js';
export type {
  CallContext,
  CircuitBreakerOptions,
  CircuitState,
  FallbackLimiter,
  OnStoreError,
  RateLimiterHooks,
  StoreCallEvent,
  StoreErrorEvent,
  StoreFailure,
} from './failure-options.js';
export type { HotKey, HotKeysOptions } from './hot-keys/hot-key-tracker.js';
export type {
  Carry,
  ClearLimitOptions,
  EffectiveLimit,
  LimitOverride,
  SetLimitOptions,
} from './live-limits.js';
export {
  AdaptiveConcurrency,
  type AdaptiveConcurrencyOptions,
  type AdaptiveDecision,
  type AdaptiveLease,
  adaptiveConcurrency,
  type ReleaseOptions,
  type SheddingOptions,
} from './overload/adaptive-concurrency.js';
export type { AimdOptions } from './overload/aimd.js';
export type { Criticality } from './overload/criticality.js';
export type { EventLoopOptions } from './overload/event-loop.js';
export type { FleetOptions, FleetReserve } from './overload/fleet.js';
export type { Gradient2Options } from './overload/gradient2.js';
export type { VegasOptions } from './overload/vegas.js';
export type { BlockDuration, Policy } from './policy.js';
export type { LeaseOption, LeaseOptions } from './quota-lease/lease-options.js';
export { RateLimiter } from './rate-limiter.js';
export type {
  AcquireOptions,
  ConsumeOptions,
  RateLimiterOptions,
  StateKeys,
} from './rate-limiter-options.js';
export type { Reservation } from './reservation.js';
export type { SetOptions } from './set.js';
export { type MemoryStoreOptions, memoryStore } from './stores/memory.js';
export { redisStore } from './stores/redis.js';
export type { RedisStoreOptions } from './stores/redis-options.js';
export type { Store } from './stores/store.js';
