/**
 * Where a handler sits, for storage keys and messages: `GET /devices/:id` (HTTP, from the
 * routing metadata), `Query devices` (GraphQL), `WS chat` (WebSocket); and which
 * RateLimitGuard classes a handler names in `@UseGuards`/`@UseInterceptors`.
 */
import type { Policy } from '@floodgate/core';
import type { AccessConfig, KeyConfig, SettleConfig } from '@floodgate/core/http';
import { type ExecutionContext, RequestMethod, type Type, VERSION_NEUTRAL } from '@nestjs/common';
import {
  GUARDS_METADATA,
  INTERCEPTORS_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  VERSION_METADATA,
} from '@nestjs/common/constants.js';
import { RATE_LIMIT_GUARD_MARK } from '../rate-limit.constants.js';
import type {
  RateLimitCost,
  RateLimitCount,
  RateLimitPolicyFunction,
  RateLimitScope,
} from '../rate-limit.interfaces.js';

// Metadata keys of @nestjs/graphql and @nestjs/websockets (optional peers, never imported).
export const RESOLVER_TYPE_METADATA = 'graphql:resolver_type';
const RESOLVER_NAME_METADATA = 'graphql:resolver_name';
export const MESSAGE_METADATA = 'message';
const GATEWAY_OPTIONS = 'websockets:gateway_options';

/** One set of policies a handler charges, with the key sources that say whose budget. */
export interface RouteCharge {
  /** The policies as declared (headers and `@SkipRateLimit(name)` use their names). */
  readonly policies: readonly Policy[];
  /** Chooses the policies per request (then `policies` is empty). */
  readonly dynamic: RateLimitPolicyFunction | undefined;
  readonly scope: RateLimitScope;
  readonly keys: KeyConfig<ExecutionContext>;
  /** Which admitted requests keep their charge. */
  readonly count: RateLimitCount;
  /** Counts but never refuses. */
  readonly shadow: boolean;
  /** The limit's own `allow` and `deny` (undefined: none). */
  readonly access?: AccessConfig<ExecutionContext>;
}

/** How one handler is limited. */
export interface RouteLimit {
  /** `cost: { estimate, actual }` of the handler's `@RateLimit`: settled after the response. */
  readonly settle?: SettleConfig<ExecutionContext, unknown> | undefined;
  /** `Controller.handler`, for messages. */
  readonly where: string;
  /**
   * The handler in storage keys: `GET /devices/:id`, `Query devices`, `WS chat`; stable across
   * class and method renames (HTTP and GraphQL) and the same on every platform and process.
   */
  readonly route: string;
  /** The handler's class in storage keys (scope 'controller'): `controller /devices`. */
  readonly controller: string;
  /** `@SkipRateLimit()`: true skips everything; a set skips the policies of those names. */
  readonly skip: boolean | ReadonlySet<string>;
  /** The module's policies, unless skipped whole or overridden by the handler's `@RateLimit`. */
  readonly module: RouteCharge | undefined;
  /** The handler's `@RateLimit`, else its class's (its first limit, when it gives several). */
  readonly own: RouteCharge | undefined;
  /** The other limits of that `@RateLimit([...])`, each with its own key. */
  readonly more: readonly RouteCharge[];
  /** Handler's `@RateLimit` policies, else the class's, else the module's (what `getPolicies` returns). */
  readonly policies: readonly Policy[] | undefined;
  /** The key sources of `own`, else the module's. */
  readonly keys: KeyConfig<ExecutionContext>;
  readonly cost: RateLimitCost;
}

/** A handler, as `ExecutionContext.getHandler()` returns it. */
type Handler = Function;

export function isRateLimitGuard(value: unknown): boolean {
  return (
    typeof value === 'function' &&
    (value as { [RATE_LIMIT_GUARD_MARK]?: boolean })[RATE_LIMIT_GUARD_MARK] === true
  );
}

export function hasGuard(controller: Type, handler: Handler): boolean {
  const guards = [GUARDS_METADATA, INTERCEPTORS_METADATA].flatMap((key) => [
    ...((Reflect.getMetadata(key, controller) as unknown[] | undefined) ?? []),
    ...((Reflect.getMetadata(key, handler) as unknown[] | undefined) ?? []),
  ]);
  // A guard given as an instance is recognised by its class.
  return guards.some(
    (g) => isRateLimitGuard(g) || isRateLimitGuard((g as object | null)?.constructor),
  );
}

const identities = new WeakMap<Policy, string>();

/**
 * What makes a policy decide as it does: its id (what is stored), name (what headers say) and
 * lockout (not part of the id: the same window with and without `blockDuration` must not share
 * a limiter).
 */
export function policyIdentity(policy: Policy): string {
  let identity = identities.get(policy);
  if (identity === undefined) {
    identity = `${policy.id}/${policy.name}${policy.lockout ? `/${JSON.stringify(policy.lockout)}` : ''}`;
    identities.set(policy, identity);
  }
  return identity;
}

/** Identifies a policy set (its policies' identities, in order). */
export function policySignature(policies: readonly Policy[]): string {
  return policies.map(policyIdentity).join(',');
}

/**
 * `GET /devices/:id` from the routing metadata: the same on every platform and for every
 * process, and unchanged when a class or method is renamed. Global prefixes are left out
 * (use the module's `prefix` to separate applications that share a store).
 */
export function routeOf(controller: Type, handler: Handler): string {
  const resolverType = Reflect.getMetadata(RESOLVER_TYPE_METADATA, handler) as unknown;
  if (resolverType !== undefined) {
    const field = Reflect.getMetadata(RESOLVER_NAME_METADATA, handler) as string | undefined;
    const type = typeof resolverType === 'string' ? resolverType : controller.name;
    return `${type} ${field ?? handler.name}`;
  }
  const message = Reflect.getMetadata(MESSAGE_METADATA, handler) as unknown;
  if (message !== undefined) {
    const gateway = Reflect.getMetadata(GATEWAY_OPTIONS, controller) as
      | { namespace?: unknown }
      | undefined;
    const namespace = typeof gateway?.namespace === 'string' ? `${gateway.namespace} ` : '';
    return `WS ${namespace}${String(message)}`;
  }
  const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
  if (method === undefined && Reflect.getMetadata(PATH_METADATA, handler) === undefined) {
    return `${controller.name}.${handler.name}`;
  }
  const verb = method === undefined ? 'ALL' : (RequestMethod[method] ?? String(method));
  const bases = paths(Reflect.getMetadata(PATH_METADATA, controller));
  const own = paths(Reflect.getMetadata(PATH_METADATA, handler));
  const full = [...new Set(bases.flatMap((b) => own.map((h) => joinPath(b, h))))].sort();
  const version =
    Reflect.getMetadata(VERSION_METADATA, handler) ??
    Reflect.getMetadata(VERSION_METADATA, controller);
  const versions =
    version === undefined
      ? ''
      : ` v${([] as unknown[])
          .concat(version)
          .map((v) => (v === VERSION_NEUTRAL ? 'neutral' : String(v)))
          .join(',')}`;
  return `${verb} ${full.join(',')}${versions}`;
}

/** `controller /devices` (an HTTP controller's paths), else `controller <class name>`. */
export function controllerOf(target: Type): string {
  const path = Reflect.getMetadata(PATH_METADATA, target) as unknown;
  return `controller ${
    path === undefined
      ? target.name
      : paths(path)
          .map((p) => joinPath(p, ''))
          .join(',')
  }`;
}

function paths(value: unknown): string[] {
  if (value === undefined || value === null) return ['/'];
  return ([] as unknown[]).concat(value).map((p) => String(p));
}

function joinPath(base: string, own: string): string {
  const path = `/${base}/${own}`.replace(/\/{2,}/g, '/');
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/** The RateLimitGuard (and interceptor) classes a handler or its class names locally. */
export function localLimiters(target: Function, handler: Function): Function[] {
  const found: Function[] = [];
  for (const key of [GUARDS_METADATA, INTERCEPTORS_METADATA]) {
    for (const on of [target, handler]) {
      for (const entry of (Reflect.getMetadata(key, on) as unknown[] | undefined) ?? []) {
        const type = typeof entry === 'function' ? entry : (entry as object | null)?.constructor;
        if (
          typeof type === 'function' &&
          (type as { [RATE_LIMIT_GUARD_MARK]?: boolean })[RATE_LIMIT_GUARD_MARK] === true
        ) {
          found.push(type);
        }
      }
    }
  }
  return found;
}
