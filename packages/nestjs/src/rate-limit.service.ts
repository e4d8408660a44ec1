/**
 * What the guard needs, resolved once per route at bootstrap: the storage-key route
 * (`GET /devices/:id`), the policies (handler over controller over module), the key sources
 * and the cost, and one RateLimiter per distinct policy set, shared by every request.
 */
import { type Policy, type RateLimiter, type Store } from '@floodgate/core';
import { type KeyConfig, parseKeyOptions, type RateLimitHeaderConfig } from '@floodgate/core/http';
import {
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type OnModuleInit,
  type Type,
} from '@nestjs/common';
import { METHOD_METADATA } from '@nestjs/common/constants.js';
import {
  APP_GUARD,
  APP_INTERCEPTOR,
  DiscoveryService,
  MetadataScanner,
  Reflector,
} from '@nestjs/core';
import {
  RATE_LIMIT_GLOBAL,
  RATE_LIMIT_METADATA,
  SKIP_RATE_LIMIT_METADATA,
} from './rate-limit.constants.js';
import type { RateLimitOptions, RateLimitScope } from './rate-limit.interfaces.js';
import {
  buildLimiter,
  type ParsedRateLimit,
  parseRateLimitOptions,
  type RateLimitConfig,
} from './rate-limit.options.js';
import { checkNames, parseSkipNames } from './rate-limit.policies.js';
import {
  controllerOf,
  hasGuard,
  isRateLimitGuard,
  MESSAGE_METADATA,
  policySignature,
  RESOLVER_TYPE_METADATA,
  type RouteCharge,
  type RouteLimit,
  routeOf,
} from './rate-limit.routes.js';

/** Injection token of the parsed module options. */
export const RATE_LIMIT_CONFIG: unique symbol = Symbol('RATE_LIMIT_CONFIG');

/** A handler, as `ExecutionContext.getHandler()` returns it. */
type Handler = Function;

/** Resolves handlers and hands out limiters; the guard's only dependency. */
@Injectable()
export class RateLimitService implements OnModuleInit {
  private readonly limiters = new Map<string, RateLimiter>();
  private readonly scopedPolicies = new Map<string, Policy>();
  private readonly routes = new Map<Type, Map<Handler, RouteLimit>>();
  private readonly parsed = new WeakMap<object, ParsedRateLimit>();
  private readonly keyConfigs = new WeakMap<object, KeyConfig<ExecutionContext>>();

  constructor(
    @Inject(RATE_LIMIT_CONFIG) readonly config: RateLimitConfig,
    @Inject(RATE_LIMIT_GLOBAL) private readonly global: boolean,
    private readonly reflector: Reflector,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  /** The module's store. */
  get store(): Store {
    return this.config.store;
  }

  /** Which header groups to send. */
  get headers(): RateLimitHeaderConfig {
    return this.config.headers;
  }

  /**
   * Validates every `@RateLimit` and `@SkipRateLimit` of every controller, resolver and gateway
   * and builds their limiters, so a bad option stops the application at bootstrap, with the
   * class and handler in the message.
   */
  onModuleInit(): void {
    const unguarded: string[] = [];
    const globalGuard = this.global || this.hasGlobalGuardProvider();
    const controllers = new Set(this.discovery.getControllers().map((w) => w.metatype));
    const classes = [
      ...controllers,
      ...this.discovery.getProviders().map((w) => (w.isDependencyTreeStatic() ? w.metatype : null)),
    ];
    const seen = new Set<unknown>();
    for (const metatype of classes) {
      const target = metatype as Type | null;
      if (!target || typeof target !== 'function' || seen.has(target)) continue;
      seen.add(target);
      const classOptions = this.reflector.get<RateLimitOptions | undefined>(
        RATE_LIMIT_METADATA,
        target,
      );
      if (classOptions !== undefined) this.parse(classOptions, target.name);
      const isController = controllers.has(target);
      const prototype = target.prototype as Record<string, unknown> | undefined;
      if (!prototype) continue;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (typeof handler !== 'function') continue;
        const isHandler =
          (isController && Reflect.getMetadata(METHOD_METADATA, handler) !== undefined) ||
          Reflect.getMetadata(RESOLVER_TYPE_METADATA, handler) !== undefined ||
          Reflect.getMetadata(MESSAGE_METADATA, handler) !== undefined;
        const own = this.reflector.get<unknown>(RATE_LIMIT_METADATA, handler);
        const skip = this.reflector.get<unknown>(SKIP_RATE_LIMIT_METADATA, handler);
        if (!isHandler && own === undefined && skip === undefined) continue;
        const route = this.route(target, handler);
        const decorated = own !== undefined || classOptions !== undefined;
        if (
          isController &&
          decorated &&
          route.skip !== true &&
          !globalGuard &&
          !hasGuard(target, handler)
        ) {
          unguarded.push(route.where);
        }
      }
    }
    if (unguarded.length > 0) {
      // Not an error: the guard may come from app.useGlobalGuards(), which is invisible here.
      new Logger('RateLimitModule').warn(
        `@RateLimit on ${unguarded.join(', ')} has no RateLimitGuard and will not be limited: ` +
          'use RateLimitModule.forRoot({ ..., global: true }) or @UseGuards(RateLimitGuard)',
      );
    }
  }

  /** How `handler` of `target` is limited (computed once, then cached). */
  route(target: Type, handler: Handler): RouteLimit {
    let byHandler = this.routes.get(target);
    if (!byHandler) {
      byHandler = new Map();
      this.routes.set(target, byHandler);
    }
    let route = byHandler.get(handler);
    if (!route) {
      route = this.resolveRoute(target, handler);
      byHandler.set(handler, route);
    }
    return route;
  }

  /**
   * The RateLimiter for `policies`: one per distinct policy set, built on first use. `where`
   * names the policies' origin in configuration errors.
   */
  limiter(policies: readonly Policy[], where = 'RateLimitModule'): RateLimiter {
    const signature = policySignature(policies);
    let limiter = this.limiters.get(signature);
    if (!limiter) {
      limiter = buildLimiter(this.config.store, policies, this.config.limiterOptions, where);
      this.limiters.set(signature, limiter);
    }
    return limiter;
  }

  /**
   * `policy` with its scope in its id, so its storage key is `<prefix>:{<key>}:<id>|<scope>`:
   * the key (the hash tag) is the caller alone, and every policy a request is charged against
   * under one key can share one limiter, one round trip, all-or-nothing. Scope 'global' keeps
   * the policy's own id.
   */
  scoped(policy: Policy, scope: RateLimitScope, route: RouteLimit): Policy {
    if (scope === 'global') return policy;
    const label = scope === 'route' ? route.route : route.controller;
    const id = `${policy.id}|${label}`;
    let made = this.scopedPolicies.get(id);
    if (!made) {
      made = Object.freeze({ ...policy, id });
      this.scopedPolicies.set(id, made);
    }
    return made;
  }

  /** An `APP_GUARD` or `APP_INTERCEPTOR` provider whose class is one of this package's. */
  private hasGlobalGuardProvider(): boolean {
    return this.discovery
      .getProviders()
      .some(
        (w) =>
          (String(w.token).startsWith(APP_GUARD) || String(w.token).startsWith(APP_INTERCEPTOR)) &&
          isRateLimitGuard(w.metatype),
      );
  }

  private resolveRoute(target: Type, handler: Handler): RouteLimit {
    const handlerWhere = `${target.name}.${handler.name}`;
    const own = this.reflector.get<RateLimitOptions | undefined>(RATE_LIMIT_METADATA, handler);
    const inherited = this.reflector.get<RateLimitOptions | undefined>(RATE_LIMIT_METADATA, target);
    const options = own ?? inherited;
    const where = own !== undefined ? handlerWhere : target.name;
    const parsed = options === undefined ? undefined : this.parse(options, where);
    const keys = options === undefined ? this.config.keys : this.keyConfig(options, parsed!, where);
    const modulePolicies = this.config.policies;
    const ownCharge: RouteCharge | undefined = parsed && {
      policies: parsed.policies,
      scope: parsed.scope,
      keys,
    };
    const moduleCharge: RouteCharge | undefined =
      modulePolicies && !parsed?.override
        ? { policies: modulePolicies, scope: this.config.scope, keys: this.config.keys }
        : undefined;
    if (ownCharge && moduleCharge) checkNames(moduleCharge, ownCharge, where);
    const skip = this.readSkip(target, handler, [
      ...(moduleCharge?.policies ?? []),
      ...(ownCharge?.policies ?? []),
    ]);
    return {
      where: handlerWhere,
      route: routeOf(target, handler),
      controller: controllerOf(target),
      skip,
      module: moduleCharge,
      own: ownCharge,
      policies: parsed?.policies ?? modulePolicies,
      keys,
      cost: parsed?.cost ?? 1,
    };
  }

  /** `@SkipRateLimit(...)` of the handler, else of its class; names must be policies here. */
  private readSkip(
    target: Type,
    handler: Handler,
    policies: readonly Policy[],
  ): boolean | ReadonlySet<string> {
    const fromHandler = this.reflector.get<unknown>(SKIP_RATE_LIMIT_METADATA, handler);
    const value =
      fromHandler !== undefined
        ? fromHandler
        : this.reflector.get<unknown>(SKIP_RATE_LIMIT_METADATA, target);
    const where = `@SkipRateLimit(${fromHandler !== undefined ? `${target.name}.${handler.name}` : target.name})`;
    if (value === undefined || value === false) return false;
    if (value === true) return true;
    return parseSkipNames(value, where, policies);
  }

  /** Parses a decorator's options once and builds its limiter (so both fail at bootstrap). */
  private parse(options: RateLimitOptions, where: string): ParsedRateLimit {
    let parsed = this.parsed.get(options);
    if (!parsed) {
      const result = parseRateLimitOptions(options, where);
      const limiter = this.limiter(result.policies, `@RateLimit(${where})`);
      parsed = { ...result, policies: limiter.policies };
      this.keyConfig(options, parsed, where);
      this.parsed.set(options, parsed);
    }
    return parsed;
  }

  private keyConfig(
    options: object,
    parsed: ParsedRateLimit,
    where: string,
  ): KeyConfig<ExecutionContext> {
    if (parsed.key === undefined) return this.config.keys;
    let keys = this.keyConfigs.get(options);
    if (!keys) {
      keys = parseKeyOptions<ExecutionContext>(
        { ...this.config.keyOptions, key: parsed.key },
        `@RateLimit(${where})`,
      );
      this.keyConfigs.set(options, keys);
    }
    return keys;
  }
}

export type { RouteCharge, RouteLimit } from './rate-limit.routes.js';
export { policySignature, routeOf } from './rate-limit.routes.js';
