/**
 * HTTP helpers shared by the framework adapters (@floodgate/express, @floodgate/koa,
 * @floodgate/nestjs): key resolution, IP normalisation, headers, problem bodies and the
 * shared option parsing. Framework-free.
 *
 * Published as the `@floodgate/core/http` subpath: for adapter authors, not application code.
 */

// Option parsing for adapters: one error shape (field, value, stable code) everywhere.
export { configError, readOptions } from '../options.js';
export {
  DEFAULT_UNKNOWN_APP_KEY,
  type UnknownAppKeyAction,
  UnknownAppKeyError,
  type UnknownAppKeyProblem,
  type VerifyAppKey,
} from './app-key.js';
export {
  DEFAULT_LEASE_TTL,
  type HttpConcurrencyOptions,
  parseConcurrencyOption,
  RELEASE_WAIT_MAX_MS,
  releaseWhenDone,
} from './concurrency.js';
export {
  DIAGNOSTIC_CODES,
  type DiagnosticCode,
  Diagnostics,
  type ValidateOption,
} from './diagnostics.js';
export {
  appendHeaderValue,
  applyRateLimitHeaders,
  ceilSeconds,
  DEFAULT_HEADER_CONFIG,
  formatRateLimit,
  formatRateLimitPolicy,
  type HeaderTarget,
  parseHeaderOptions,
  policyResetSeconds,
  type RateLimitHeaderConfig,
  type RateLimitHeaderOptions,
  retryAfterSeconds,
  serializeSfString,
} from './headers.js';
export {
  DEFAULT_IPV6_SUBNET,
  MAX_IPV6_SUBNET,
  MIN_IPV6_SUBNET,
  normalizeIp,
  parseIpv6Subnet,
} from './ip.js';
export { type IpHeaderOption, isHeaderName } from './ip-header.js';
export {
  DEFAULT_APP_KEY_HEADER,
  DEFAULT_APP_KEY_QUERY,
  DEFAULT_FALLBACK_KEY,
  DEFAULT_KEY_SOURCE,
  type HttpRequestView,
  KEY_OPTION_NAMES,
  type KeyConfig,
  type KeyFunction,
  type KeyName,
  type KeyOptions,
  type KeySource,
  parseKeyOptions,
  resolveKey,
} from './keys.js';
export {
  applyCheckHeaders,
  checkHttpRequest,
  HTTP_OPTION_NAMES,
  type HttpCheck,
  type HttpRateLimitConfig,
  type HttpRateLimitOptions,
  parseHttpRateLimitOptions,
  resolveCost,
  waitForDelay,
} from './options.js';
export {
  PROBLEM_CONTENT_TYPE,
  QUOTA_EXCEEDED_TYPE,
  type QuotaExceededProblem,
  quotaExceededProblem,
} from './problem.js';
