/**
 * @floodgate/core — rate limiting that decides in one round trip, in Redis (Lua) or in
 * memory (the TypeScript twins), with the same answers from both.
 */
export type { Algorithm, CheckResult } from './algorithms/algorithm.js';
export { type FixedWindowOptions, fixedWindow } from './algorithms/fixed-window.js';
export { type GcraOptions, gcra } from './algorithms/gcra.js';
export { ALGORITHMS } from './algorithms/index.js';
export { type LeakyBucketOptions, leakyBucket } from './algorithms/leaky-bucket.js';
export { type SlidingLogOptions, slidingLog } from './algorithms/sliding-log.js';
export {
  DEFAULT_SLIDING_WINDOW_BUCKETS,
  MAX_SLIDING_WINDOW_BUCKETS,
  type SlidingWindowOptions,
  slidingWindow,
} from './algorithms/sliding-window.js';
export {
  SATURATED_WAIT_US,
  SMOOTH_BURSTY_RETENTION_US,
  type SmoothBurstyOptions,
  smoothBursty,
} from './algorithms/smooth-bursty.js';
export {
  DEFAULT_COLD_FACTOR,
  type SmoothWarmingUpOptions,
  smoothWarmingUp,
} from './algorithms/smooth-warming-up.js';
export { type TokenBucketOptions, tokenBucket } from './algorithms/token-bucket.js';
export type { Clock } from './clock.js';
export {
  type ConcurrencyDecision,
  ConcurrencyLimiter,
  type ConcurrencyLimiterOptions,
  type Lease,
} from './concurrency-limiter.js';
export type {
  Decision,
  DecisionReason,
  PolicyDecision,
  StoreDecision,
  StoreResult,
} from './decision.js';
export {
  DEFAULT_DENIED_CACHE_KEYS,
  DeniedCache,
  type DeniedCacheOptions,
} from './denied-cache.js';
export { type Duration, formatDuration, parseDuration } from './duration.js';
export {
  RateLimitArgumentError,
  RateLimitConfigError,
  type RateLimitConfigErrorCode,
  RateLimitStoreError,
} from './errors.js';
export {
  type CallContext,
  type CircuitBreakerOptions,
  type CircuitState,
  DEFAULT_CIRCUIT_COOLDOWN_MS,
  DEFAULT_FAILURE_THRESHOLD,
  DEFAULT_STORE_TIMEOUT_MS,
  type FallbackLimiter,
  type OnStoreError,
  type RateLimiterHooks,
  type StoreErrorEvent,
  type StoreFailure,
} from './failure-policy.js';
export {
  ENGINE_SCRIPT,
  type GeneratedScript,
  LEASE_SCRIPTS,
  type LeaseScript,
  SCRIPTS,
} from './generated/scripts.js';
// HTTP helpers shared by the framework adapters (issue 4).
export * from './http/index.js';
export { encodeKey, MAX_RAW_KEY_LENGTH } from './keys.js';
// Option parsing for adapters: one error shape (field, value, stable code) everywhere.
export { configError, readOptions } from './options.js';
export type { BlockDuration, Policy } from './policy.js';
export {
  type AcquireOptions,
  type ConsumeOptions,
  DEFAULT_PREFIX,
  RateLimiter,
  type RateLimiterOptions,
} from './rate-limiter.js';
export {
  DEFAULT_MAX_KEYS,
  MemoryStore,
  type MemoryStoreOptions,
  memoryStore,
} from './stores/memory.js';
export {
  INJECTED_CLOCK_TTL_SLACK_MS,
  RedisStore,
  type RedisStoreOptions,
  redisStore,
} from './stores/redis.js';
export { type ScriptClient, toScriptClient } from './stores/redis-client.js';
export { scriptFor } from './stores/scripts.js';
export type { PreparedPolicies, Store } from './stores/store.js';
