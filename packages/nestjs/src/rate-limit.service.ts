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
  RequestMethod,
  type Type,
  VERSION_NEUTRAL,
} from '@nestjs/common';
import {
  GUARDS_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  VERSION_METADATA,
} from '@nestjs/common/constants.js';
import { APP_GUARD, DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import {
  RATE_LIMIT_GLOBAL,
  RATE_LIMIT_GUARD_MARK,
  RATE_LIMIT_METADATA,
  SKIP_RATE_LIMIT_METADATA,
} from './rate-limit.constants.js';
import type { RateLimitCost, RateLimitOptions } from './rate-limit.interfaces.js';
import {
  buildLimiter,
  type ParsedRateLimit,
  parseRateLimitOptions,
  type RateLimitConfig,
} from './rate-limit.options.js';

/** Injection token of the parsed module options. */
export const RATE_LIMIT_CONFIG: unique symbol = Symbol('RATE_LIMIT_CONFIG');

/** How one handler is limited. */
export interface RouteLimit {
  /** `Controller.handler`, for messages. */
  readonly where: string;
  /** Method and route path, e.g. `GET /devices/:id`: the route part of every storage key. */
  readonly route: string;
  /** `@SkipRateLimit()` applies. */
  readonly skip: boolean;
  /** Handler's `@RateLimit`, else the controller's, else the module's; undefined: not limited. */
  readonly policies: readonly Policy[] | undefined;
  readonly keys: KeyConfig<ExecutionContext>;
  readonly cost: RateLimitCost;
}

/** A route handler, as `ExecutionContext.getHandler()` returns it. */
type Handler = Function;

/** Resolves routes and hands out limiters; the guard's only dependency. */
@Injectable()
export class RateLimitService implements OnModuleInit {
  private readonly limiters = new Map<string, RateLimiter>();
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
   * Validates every `@RateLimit` of every controller and builds their limiters, so a bad option
   * stops the application at bootstrap, with the controller and handler in the message.
   */
  onModuleInit(): void {
    const unguarded: string[] = [];
    const globalGuard = this.global || this.hasGlobalGuardProvider();
    for (const wrapper of this.discovery.getControllers()) {
      const controller = wrapper.metatype as Type | null;
      if (!controller || typeof controller !== 'function') continue;
      const classOptions = this.reflector.get<RateLimitOptions | undefined>(
        RATE_LIMIT_METADATA,
        controller,
      );
      if (classOptions !== undefined) this.parse(classOptions, controller.name);
      const prototype = controller.prototype as Record<string, unknown>;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (typeof handler !== 'function') continue;
        const isRoute = Reflect.getMetadata(METHOD_METADATA, handler) !== undefined;
        const own = this.reflector.get<RateLimitOptions | undefined>(RATE_LIMIT_METADATA, handler);
        if (!isRoute && own === undefined) continue;
        const route = this.route(controller, handler);
        const decorated = own !== undefined || classOptions !== undefined;
        if (decorated && !route.skip && !globalGuard && !hasGuard(controller, handler)) {
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

  /** How `handler` of `controller` is limited (computed once, then cached). */
  route(controller: Type, handler: Handler): RouteLimit {
    let byHandler = this.routes.get(controller);
    if (!byHandler) {
      byHandler = new Map();
      this.routes.set(controller, byHandler);
    }
    let route = byHandler.get(handler);
    if (!route) {
      route = this.resolveRoute(controller, handler);
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

  /** An `APP_GUARD` provider whose class is RateLimitGuard or a subclass. */
  private hasGlobalGuardProvider(): boolean {
    return this.discovery
      .getProviders()
      .some((w) => String(w.token).startsWith(APP_GUARD) && isRateLimitGuard(w.metatype));
  }

  private resolveRoute(controller: Type, handler: Handler): RouteLimit {
    const handlerWhere = `${controller.name}.${handler.name}`;
    const skip =
      this.reflector.getAllAndOverride<boolean | undefined>(SKIP_RATE_LIMIT_METADATA, [
        handler,
        controller,
      ]) === true;
    const own = this.reflector.get<RateLimitOptions | undefined>(RATE_LIMIT_METADATA, handler);
    const inherited = this.reflector.get<RateLimitOptions | undefined>(
      RATE_LIMIT_METADATA,
      controller,
    );
    const options = own ?? inherited;
    const where = own !== undefined ? handlerWhere : controller.name;
    const parsed = options === undefined ? undefined : this.parse(options, where);
    const policies = parsed?.policies ?? this.config.policies;
    return {
      where: handlerWhere,
      route: routeOf(controller, handler),
      skip,
      policies,
      keys: options === undefined ? this.config.keys : this.keyConfig(options, parsed!, where),
      cost: parsed?.cost ?? 1,
    };
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

function isRateLimitGuard(value: unknown): boolean {
  return (
    typeof value === 'function' &&
    (value as { [RATE_LIMIT_GUARD_MARK]?: boolean })[RATE_LIMIT_GUARD_MARK] === true
  );
}

function hasGuard(controller: Type, handler: Handler): boolean {
  const guards = [
    ...((Reflect.getMetadata(GUARDS_METADATA, controller) as unknown[] | undefined) ?? []),
    ...((Reflect.getMetadata(GUARDS_METADATA, handler) as unknown[] | undefined) ?? []),
  ];
  // A guard given as an instance is recognised by its class.
  return guards.some(
    (g) => isRateLimitGuard(g) || isRateLimitGuard((g as object | null)?.constructor),
  );
}

/** Identifies a policy set: ids (what is stored) and names (what headers say). */
export function policySignature(policies: readonly Policy[]): string {
  return policies.map((p) => `${p.id}/${p.name}`).join(',');
}

/**
 * `GET /devices/:id` from the routing metadata: the same on every platform and for every
 * process, and unchanged when a class or method is renamed. Global prefixes are left out
 * (use the module's `prefix` to separate applications that share a store).
 */
export function routeOf(controller: Type, handler: Handler): string {
  const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
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

function paths(value: unknown): string[] {
  if (value === undefined || value === null) return ['/'];
  return ([] as unknown[]).concat(value).map((p) => String(p));
}

function joinPath(base: string, own: string): string {
  const path = `/${base}/${own}`.replace(/\/{2,}/g, '/');
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}
