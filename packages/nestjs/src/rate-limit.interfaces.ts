/**
 * Option types of RateLimitModule and @RateLimit. Key names and header options are the ones
 * the Express and Koa adapters take; Nest key functions receive the ExecutionContext.
 */
import {
  type Decision,
  type Duration,
  type FixedWindowOptions,
  type Policy,
  type RateLimiterOptions,
  type Store,
} from '@floodgate/core';
import { type RateLimitHeaderOptions } from '@floodgate/core/http';
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

interface RateLimitCommon {
  /** Who is limited; @default the module's `key`. */
  key?: RateLimitKey;
  /**
   * Units each request takes, charged to these policies and to the module's policies alike.
   * @default 1
   */
  cost?: RateLimitCost;
  /** Which requests share these policies' budget. @default 'route' */
  scope?: RateLimitScope;
  /**
   * `true`: only these policies apply here, not the module's `policies` as well.
   * @default false
   */
  override?: boolean;
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
}

/** `@RateLimit({ policies: [gcra(...), fixedWindow(...)] })`: any policies, all-or-nothing. */
export interface RateLimitPoliciesOptions extends RateLimitCommon {
  policies: Policy | readonly Policy[];
}

/** What `@RateLimit(...)` takes. */
export type RateLimitOptions = RateLimitWindowOptions | RateLimitPoliciesOptions;

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
  policies?: Policy | readonly Policy[];
  /** Which requests share the module policies' budget. @default 'route' */
  scope?: RateLimitScope;
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
