/**
 * Option types of RateLimitModule and @RateLimit. Key names and header options are the ones
 * the Express and Koa adapters take; Nest key functions receive the ExecutionContext.
 */
import {
  type BlockDuration,
  type Decision,
  type Duration,
  type FixedWindowOptions,
  type Policy,
  type RateLimiterOptions,
  type Store,
} from '@floodgate/core';
import {
  type AccessListOption,
  type RateLimitHeaderOptions,
  type SettledCost,
} from '@floodgate/core/http';
import type { ExecutionContext, InjectionToken, ModuleMetadata, Type } from '@nestjs/common';

/** A key function: the caller's identity for this request, or `undefined` to try the next. */
export type RateLimitKeyFunction = (
  context: ExecutionContext,
) => string | undefined | Promise<string | undefined>;

/**
 * Who is limited: `'ip'` (the platform's `request.ip`, so its trust-proxy setting applies),
 * `'appKey'` (the `x-app-key` header or `appKey` query parameter), `'clientId'`
 * (`request.user.clientId` or `request.user.id`, set by an auth guard that runs first), a
 * function of the ExecutionContext, or an array tried in order.
 */
export type RateLimitKey =
  | 'ip'
  | 'appKey'
  | 'clientId'
  | RateLimitKeyFunction
  | ReadonlyArray<'ip' | 'appKey' | 'clientId' | RateLimitKeyFunction>;

/** Units a request takes: a number, or a function of the ExecutionContext. @default 1 */
export type RateLimitCost = number | ((context: ExecutionContext) => number | Promise<number>);

/**
 * Which requests share a budget (per key): `'route'` each handler (HTTP method and path, GraphQL
 * field, WebSocket message), `'controller'` every handler of the class, `'global'` every
 * handler whose limit uses the same policy, across the whole API.
 */
export type RateLimitScope = 'route' | 'controller' | 'global';

/**
 * The policies of a request chosen when it arrives (per plan, tenant or API key, looked up
 * from a database). Equal sets share one limiter (a bounded cache); a client whose plan changes
 * is counted under the new set's state from its next request.
 */
export type RateLimitPolicyFunction = (
  context: ExecutionContext,
) => Policy | readonly Policy[] | Promise<Policy | readonly Policy[]>;

/**
 * Which admitted HTTP requests keep their charge once the response is done: `'all'`,
 * `'failed'` (status >= 400, including other 429s and exceptions Nest's filters map, or the
 * response aborted or errored), `'succeeded'` (status < 400), or a function of the context and
 * the platform response (Express `res`, Fastify `reply`) that returns true to count. A request
 * that does not count is refunded (`limiter.refund`, every policy of the set). GraphQL and
 * WebSocket calls always count.
 */
export type RateLimitCount =
  | 'all'
  | 'failed'
  | 'succeeded'
  | ((context: ExecutionContext, response: unknown) => boolean | Promise<boolean>);

/**
 * An allow or deny list: IPv4 and IPv6 addresses and CIDR blocks (matched against the client
 * IP the `'ip'` key source resolves, IPv4-mapped IPv6 folded), or a predicate of the
 * ExecutionContext.
 */
export type RateLimitAccessList = AccessListOption<ExecutionContext>;

/** A decision as handlers and hooks see it: `shadow: true` when it came from a shadow set. */
export type RateLimitDecisionView = Decision & { readonly shadow?: boolean };

interface RateLimitCommon {
  /** Who is limited; @default the module's `key`. */
  key?: RateLimitKey;
  /**
   * Units each request takes, charged to these policies and to the module's policies alike; or
   * `{ estimate, actual }`: the estimate is charged, and once the HTTP response has finished the
   * request is settled at `actual(context, response)` (or a response header or trailer):
   * refunded below the estimate, the overrun charged into debt above it (docs/algorithms.md#debt).
   * @default 1
   */
  cost?: RateLimitCost | SettledCost<ExecutionContext, unknown>;
  /** Which requests share these policies' budget. @default 'route' */
  scope?: RateLimitScope;
  /**
   * `true`: only these policies apply here, not the module's `policies` as well.
   * @default false
   */
  override?: boolean;
  /** Which requests keep their charge (see RateLimitCount). @default the module's `count` */
  count?: RateLimitCount;
  /**
   * Count as normal but never refuse: no 429, no exception; the decision reaches
   * `@RateLimitDecision()` and the hooks with `shadow: true`. @default the module's `shadow`
   */
  shadow?: boolean;
  /**
   * Requests that skip this limit (IPs, CIDRs or a predicate); the module's `allow` skips
   * every limit. @default none
   */
  allow?: RateLimitAccessList;
  /** Requests refused with 403 here, before any store call. @default none */
  deny?: RateLimitAccessList;
}

/** `@RateLimit({ limit: 100, window: '1m' })`: shorthand for one `fixedWindow` policy. */
export interface RateLimitWindowOptions extends RateLimitCommon {
  /** Requests admitted per window. */
  limit: number;
  /** Window length: milliseconds or `'1s'`, `'1m'`, `'1h'`, … */
  window: Duration;
  /** Policy name shown in headers. @default `fixed-<limit>-per-<window>` */
  name?: string;
  /**
   * Where windows start: `'clock'` (aligned, every key at once) or `'first-request'` (at each
   * key's first admitted request), as fixedWindow's `anchor`. @default 'clock'
   */
  anchor?: FixedWindowOptions['anchor'];
  /**
   * Lock the key out this long once the window denies it (progressive with `{ initial,
   * multiplier, max, forgetAfter }`): every request then gets 429 with `blocked: true`.
   * @default none
   */
  blockDuration?: BlockDuration;
}

/** `@RateLimit({ policies: [gcra(...), fixedWindow(...)] })`: any policies, all-or-nothing. */
export interface RateLimitPoliciesOptions extends RateLimitCommon {
  /** The policies, or a function choosing them per request (RateLimitPolicyFunction). */
  policies: Policy | readonly Policy[] | RateLimitPolicyFunction;
}

/** One limit of `@RateLimit(...)`. */
export type RateLimitLimitOptions = RateLimitWindowOptions | RateLimitPoliciesOptions;

/**
 * What `@RateLimit(...)` takes: one limit, or several with their own keys, all of which must
 * admit (login: per IP and per IP+username). `cost` and `override` are read from the first.
 */
export type RateLimitOptions = RateLimitLimitOptions | readonly RateLimitLimitOptions[];

/**
 * Options of `RateLimitModule.forRoot` (and what `forRootAsync`'s factory returns). Besides
 * these, every RateLimiter option (`prefix`, `onStoreError`, `timeout`, `circuitBreaker`,
 * `hooks`) is passed to each limiter the module builds.
 */
export interface RateLimitModuleOptions extends Omit<RateLimiterOptions, 'store' | 'policies'> {
  /**
   * Where state lives: `memoryStore()` or `redisStore({ client })`.
   * @default `memoryStore()`, with a one-time warning (one process's memory: not for a cluster)
   */
  store?: Store;
  /**
   * Policies for every guarded handler; a handler's `@RateLimit` adds its own on top (the
   * request must pass both) unless it says `override: true`. @default none
   */
  policies?: Policy | readonly Policy[] | RateLimitPolicyFunction;
  /** Which requests share the module policies' budget. @default 'route' */
  scope?: RateLimitScope;
  /** Which requests keep their charge; also every `@RateLimit`'s default. @default 'all' */
  count?: RateLimitCount;
  /**
   * Shadow mode for the module policies and every `@RateLimit` that does not say: count, never
   * refuse; headers only when `headers` is given. @default false
   */
  shadow?: boolean;
  /**
   * Requests that skip every limit, not counted, no headers (health checks, internal networks):
   * e.g. `['10.0.0.0/8', '::1']`, or a predicate. @default none
   */
  allow?: RateLimitAccessList;
  /**
   * Requests refused with 403 and a problem body, before any store call; checked before
   * `allow`. @default none
   */
  deny?: RateLimitAccessList;
  /** Requests for which this returns true are not limited at all (health checks, e2e tests). */
  skip?: (context: ExecutionContext) => boolean | Promise<boolean>;
  /**
   * `message` of the 429 body (and of GraphQL and WebSocket denials).
   * @default 'Too Many Requests'
   */
  errorMessage?: string | ((context: ExecutionContext, decision: Decision) => string);
  /**
   * Where the limit runs when `global` is on: `'guard'` (an `APP_GUARD`, before the guards of
   * controllers and handlers) or `'interceptor'` (an `APP_INTERCEPTOR`, after every guard, so
   * an auth guard has set `request.user` whatever its place). @default 'guard'
   */
  mode?: 'guard' | 'interceptor';
  /**
   * What a key with `'clientId'` does when the request carries credentials (an `Authorization`
   * header) but no principal is set: the limiter ran before authentication. `'error'` throws
   * RateLimitConfigError `FLOODGATE_GUARD_ORDER` (a 500 naming the fix) instead of putting every
   * such client into one bucket; `'fallback'` uses the next key source. Interceptor mode always
   * falls back (every guard has run by then). @default 'error'
   */
  onMissingPrincipal?: 'error' | 'fallback';
  /** Default key of every route; a decorator's `key` replaces it. @default 'ip' */
  key?: RateLimitKey;
  /**
   * Key used when no source yields one (e.g. `key: 'clientId'` on an unauthenticated request):
   * all such requests share this bucket, so none goes unlimited. @default 'fallback:unidentified'
   */
  fallbackKey?: string;
  /** Header the `appKey` source reads. @default 'x-app-key' */
  appKeyHeader?: string;
  /** Query parameter the `appKey` source reads without the header; `false` for none. @default 'appKey' */
  appKeyQuery?: string | false;
  /** Getter for the `clientId` source. @default `request.user.id ?? request.user.clientId` */
  clientId?: (context: ExecutionContext) => string | number | undefined | null;
  /** Prefix length IPv6 addresses are grouped by, 32 to 64. @default 56 */
  ipv6Subnet?: number;
  /**
   * `true`: IETF `RateLimit-Policy`/`RateLimit` and `Retry-After`; `false`: none; or switch
   * groups (`{ legacy: true }` adds `X-RateLimit-*`). @default true
   */
  headers?: boolean | RateLimitHeaderOptions;
  /** Register RateLimitGuard as a global guard (`APP_GUARD`). @default false */
  global?: boolean;
}

/**
 * What `forRootAsync`'s factory returns: everything but `global` and `mode`, which must be
 * static (they decide which providers the module registers).
 */
export type RateLimitModuleFactoryOptions = Omit<RateLimitModuleOptions, 'global' | 'mode'>;

/** A class that makes the module's options (`forRootAsync({ useClass })`). */
export interface RateLimitOptionsFactory {
  createRateLimitOptions(): RateLimitModuleFactoryOptions | Promise<RateLimitModuleFactoryOptions>;
}

/** Options of `RateLimitModule.forRootAsync`. */
export interface RateLimitModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  useFactory?: (
    // biome-ignore lint/suspicious/noExplicitAny: Nest factories take any injected values.
    ...args: any[]
  ) => RateLimitModuleFactoryOptions | Promise<RateLimitModuleFactoryOptions>;
  /** Tokens whose values `useFactory` receives. */
  inject?: InjectionToken[];
  useClass?: Type<RateLimitOptionsFactory>;
  useExisting?: Type<RateLimitOptionsFactory>;
  /** Register RateLimitGuard as a global guard (`APP_GUARD`). @default false */
  global?: boolean;
  /** As `mode` of `forRoot`. @default 'guard' */
  mode?: 'guard' | 'interceptor';
}

/** Which of a request's charges to act on. */
export interface RateLimitTargetOptions {
  /**
   * `'*'`: setLimit, getLimit and clearLimit act on every key of the limiters the request is
   * charged by (the override for every key), not on the request's own key.
   * @default the key the request resolves to
   */
  key?: '*';
  /**
   * Only the policy set that contains the policy of this name (e.g. the per-username limit of
   * a login route, not the per-IP one). @default every set the request is charged
   */
  policy?: string;
  /**
   * Act on the key the request resolves to on another handler, `[Controller, 'method']` (e.g.
   * a captcha route lifting the login route's lockout). @default the request's own handler
   */
  handler?: readonly [controller: Type, method: string];
}

/** An ExecutionContext, or the request the guard limited (Express `req`, Fastify `request`). */
export type RateLimitTarget = ExecutionContext | object;
