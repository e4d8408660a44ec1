/**
 * HTTP helpers shared by the framework adapters (@floodgate/express, @floodgate/koa,
 * @floodgate/nestjs): key resolution, IP normalisation, headers, problem bodies and the
 * shared option parsing. Framework-free.
 *
 * Published as the `@floodgate/core/http` subpath: for adapter authors, not application code.
 */

// Which policy decides, for several limiters' decisions (one request charged under several keys).
export { mergeDecisions } from '../decision.js';
// Every code Floodgate reports links to its entry in docs/troubleshooting.md.
export { emitWarning, helpUrl } from '../errors.js';
// The one guarded way to call user hooks (wrappers such as @floodgate/opentelemetry use it).
export { HookCaller } from '../hook-caller.js';
// Option parsing for adapters: one error shape (field, value, stable code) everywhere, and
// the core's readers reporting fields under the adapter's own names (readAs).
export {
  configError,
  isCost,
  type OptionNames,
  optionNames,
  readAs,
  readOptions,
} from '../options.js';
export { createRateLimiter } from '../rate-limiter.js';
export { DEFAULT_PREFIX, RATE_LIMITER_OPTION_NAMES } from '../rate-limiter-options.js';
export {
  ACCESS_DENIED_TYPE,
  ACCESS_OPTION_NAMES,
  type AccessConfig,
  AccessDeniedError,
  type AccessDeniedProblem,
  type AccessList,
  type AccessListOption,
  type AccessOptions,
  type AccessRanges,
  accessDeniedProblem,
  checkAccess,
  clientAddress,
  onAccessList,
  parseAccessList,
  parseAccessOptions,
} from './access-list.js';
export {
  DEFAULT_UNKNOWN_APP_KEY,
  type UnknownAppKeyAction,
  UnknownAppKeyError,
  type UnknownAppKeyProblem,
  type VerifyAppKey,
} from './app-key.js';
export { beforeEnd } from './before-end.js';
export {
  applyCheckHeaders,
  checkHttpRequest,
  resolveCost,
  waitForDelay,
} from './check-request.js';
export {
  DEFAULT_LEASE_TTL,
  type HttpConcurrencyOptions,
  parseConcurrencyOption,
  RELEASE_WAIT_MAX_MS,
  releaseWhenDone,
} from './concurrency.js';
export {
  type Charge,
  type CountConfig,
  type CountOption,
  CountWarning,
  chargedWindowEnd,
  chargeOf,
  DEFAULT_COUNT,
  parseCountOption,
  refundByOutcome,
  refundUncounted,
  storeClock,
} from './count.js';
export {
  DIAGNOSTIC_CODES,
  type DiagnosticCode,
  Diagnostics,
  type ValidateOption,
} from './diagnostics.js';
export { type DecisionHolder, exposeDecision } from './expose.js';
export {
  DEFAULT_HEADER_CONFIG,
  DEFAULT_LEGACY_HEADER_NAMES,
  HEADER_DRAFTS,
  type LegacyHeaderNames,
  parseHeaderOptions,
  type RateLimitHeaderConfig,
  type RateLimitHeaderDraft,
  type RateLimitHeaderOptions,
} from './header-options.js';
export {
  appendHeaderValue,
  applyRateLimitHeaders,
  ceilSeconds,
  formatRateLimit,
  formatRateLimitPolicy,
  formatUnnamedRateLimitPolicy,
  type HeaderContext,
  type HeaderTarget,
  partitionKey,
  policyResetSeconds,
  retryAfterSeconds,
  serializeSfString,
  storeDecided,
} from './headers.js';
export {
  DEFAULT_IPV6_SUBNET,
  type IpAddressParts,
  MAX_IPV6_SUBNET,
  MIN_IPV6_SUBNET,
  normalizeIp,
  parseIpAddress,
  parseIpv6Subnet,
} from './ip.js';
export { type IpHeaderOption, isHeaderName } from './ip-header.js';
export {
  DEFAULT_APP_KEY_HEADER,
  DEFAULT_APP_KEY_QUERY,
  DEFAULT_FALLBACK_KEY,
  DEFAULT_KEY_SOURCE,
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
  type LoadShedderConfig,
  type LoadShedderOptions,
  OVERLOADED_TYPE,
  type OverloadedAnswer,
  type OverloadedProblem,
  overloadedAnswer,
  parseLoadShedderOptions,
  releaseWhenFinished,
  shedRequest,
} from './load-shedder.js';
export {
  HTTP_OPTION_NAMES,
  type HttpRateLimitConfig,
  type HttpRateLimitOptions,
  parseHttpRateLimitOptions,
} from './options.js';
// Own properties only, a JSON "__proto__" key refused: for options objects read by hand.
export { ownOptions } from './own-options.js';
export {
  POLICY_SET_CACHE_SIZE,
  type PoliciesFunction,
  type PolicySetLimiter,
  PolicySets,
  validateSetOptions,
} from './policy-sets.js';
export {
  BANNED_TYPE,
  type BannedProblem,
  bannedProblem,
  deniedProblem,
  PROBLEM_CONTENT_TYPE,
  QUOTA_EXCEEDED_TYPE,
  type QuotaExceededProblem,
  quotaExceededProblem,
  STORE_UNAVAILABLE_TYPE,
  type StoreUnavailableProblem,
  storeUnavailableProblem,
} from './problem.js';
export { type RawBackedRequest, rawProxyTrust, trustsEveryHop } from './raw-proxy-trust.js';
export { type RateLimitControl, rateLimitControl } from './reset-key.js';
export {
  type ActualCost,
  type CostConfig,
  checkSettleOption,
  parseCostOption,
  type SettleConfig,
  type SettledCost,
  settleAfterResponse,
} from './settle.js';
export { parseShadowOption, shadowCheck, shadowDecision, shadowHooks } from './shadow.js';
export type { HttpCheck, HttpRequestView } from './types.js';
