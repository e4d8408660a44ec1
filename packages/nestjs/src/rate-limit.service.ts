/**
 * What the guard needs, resolved once per route at bootstrap: the storage-key route
 * (`GET /devices/:id`), the policies (handler over controller over module), the key sources
 * and the cost, and one RateLimiter per distinct policy set, shared by every request.
 */
import { type Policy, RateLimitConfigError, type RateLimiter, type Store } from '@floodgate/core';
import {
  configError,
  type KeyConfig,
  parseKeyOptions,
  type RateLimitHeaderConfig,
} from '@floodgate/core/http';
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
  INTERCEPTORS_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  VERSION_METADATA,
} from '@nestjs/common/constants.js';
import {
  APP_GUARD,
  APP_INTERCEPTOR,
  DiscoveryService,
  MetadataScanner,
  Reflector,
} from '@nestjs/core';
import {
  RATE_LIMIT_GLOBAL,
  RATE_LIMIT_GUARD_MARK,
  RATE_LIMIT_METADATA,
  SKIP_RATE_LIMIT_METADATA,
} from './rate-limit.constants.js';
import type { RateLimitCost, RateLimitOptions, RateLimitScope } from './rate-limit.interfaces.js';
import {
  buildLimiter,
  type ParsedRateLimit,
  parseRateLimitOptions,
  type RateLimitConfig,
  rethrow,
} from './rate-limit.options.js';

// Metadata keys of @nestjs/graphql and @nestjs/websockets (optional peers, never imported).
const RESOLVER_TYPE_METADATA = 'graphql:resolver_type';
const RESOLVER_NAME_METADATA = 'graphql:resolver_name';
const MESSAGE_METADATA = 'message';
const GATEWAY_OPTIONS = 'websockets:gateway_options';

/** Injection token of the parsed module options. */
export const RATE_LIMIT_CONFIG: unique symbol = Symbol('RATE_LIMIT_CONFIG');

/** One set of policies a handler charges, with the key sources that say whose budget. */
export interface RouteCharge {
  /** The policies as declared (headers and `@SkipRateLimit(name)` use their names). */
  readonly policies: readonly Policy[];
  readonly scope: RateLimitScope;
  readonly keys: KeyConfig<ExecutionContext>;
}

/** How one handler is limited. */
export interface RouteLimit {
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
  /** The handler's `@RateLimit`, else its class's. */
  readonly own: RouteCharge | undefined;
  /** Handler's `@RateLimit` policies, else the class's, else the module's (what `getPolicies` returns). */
  readonly policies: readonly Policy[] | undefined;
  /** The key sources of `own`, else the module's. */
  readonly keys: KeyConfig<ExecutionContext>;
  readonly cost: RateLimitCost;
}

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

  /** The RateLimiter for `policies`: one per distinct policy set, built on first use. */
  limiter(policies: readonly Policy[]): RateLimiter {
    const signature = policySignature(policies);
    let limiter = this.limiters.get(signature);
    if (!limiter) {
      limiter = buildLimiter(this.config.store, policies, this.config.limiterOptions);
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
    const known = policies.map((p) => p.name);
    if (!Array.isArray(value)) {
      throw configError(where, value, 'no argument, true, false, or policy names as strings');
    }
    value.forEach((name: unknown, i) => {
      if (typeof name !== 'string' || !known.includes(name)) {
        throw new RateLimitConfigError(
          'FLOODGATE_INVALID_OPTION',
          `${where}[${i}]`,
          name,
          `${where}: ${describeName(name)} is not the name of a policy that applies here ` +
            `(${known.length > 0 ? known.map((n) => `"${n}"`).join(', ') : 'none'}); ` +
            'give @SkipRateLimit() no argument to skip every limit',
        );
      }
    });
    return new Set(value as string[]);
  }

  /** Parses a decorator's options once and builds its limiter (so both fail at bootstrap). */
  private parse(options: RateLimitOptions, where: string): ParsedRateLimit {
    let parsed = this.parsed.get(options);
    if (!parsed) {
      const result = parseRateLimitOptions(options, where);
      const limiter = rethrow(`@RateLimit(${where})`, 'RateLimiter', () =>
        this.limiter(result.policies),
      );
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

/** Module and handler policies may share a limiter (and headers): their names must differ. */
function checkNames(module: RouteCharge, own: RouteCharge, where: string): void {
  const names = new Set(module.policies.map((p) => p.name));
  own.policies.forEach((p, i) => {
    if (!names.has(p.name)) return;
    throw new RateLimitConfigError(
      'FLOODGATE_DUPLICATE_POLICY',
      `@RateLimit(${where}).policies[${i}].name`,
      p.name,
      `@RateLimit(${where}): policy name "${p.name}" is also a module policy's name; name it ` +
        'differently (both apply, and headers tell policies apart by name), or give override: true',
    );
  });
}

function describeName(name: unknown): string {
  return typeof name === 'string' ? `"${name}"` : String(name);
}

function isRateLimitGuard(value: unknown): boolean {
  return (
    typeof value === 'function' &&
    (value as { [RATE_LIMIT_GUARD_MARK]?: boolean })[RATE_LIMIT_GUARD_MARK] === true
  );
}

function hasGuard(controller: Type, handler: Handler): boolean {
  const guards = [GUARDS_METADATA, INTERCEPTORS_METADATA].flatMap((key) => [
    ...((Reflect.getMetadata(key, controller) as unknown[] | undefined) ?? []),
    ...((Reflect.getMetadata(key, handler) as unknown[] | undefined) ?? []),
  ]);
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
