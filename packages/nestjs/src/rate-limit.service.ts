/**
 * What the guard needs, resolved once per route at bootstrap: the storage-key route
 * (`GET /devices/:id`), the policies (handler over controller over module), the key sources
 * and the cost, and one RateLimiter per distinct policy set, shared by every request.
 */
import {
  type ClearLimitOptions,
  type Duration,
  type EffectiveLimit,
  type LimitOverride,
  type Policy,
  RateLimitConfigError,
  type RateLimiter,
  type RateLimiterHooks,
  type SetLimitOptions,
  type Store,
} from '@floodgate/core';
import {
  CountWarning,
  type KeyConfig,
  parseKeyOptions,
  type RateLimitHeaderConfig,
  shadowHooks,
} from '@floodgate/core/http';
import {
  type ExecutionContext,
  Inject,
  Injectable,
  type OnModuleInit,
  type Type,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { checkHandlers } from './internal/bootstrap.js';
import { BoundedCache } from './internal/bounded-cache.js';
import { buildLimiter, type RateLimitConfig } from './internal/options.js';
import { checkNames, parseSkipNames } from './internal/policy-checks.js';
import { type ParsedRateLimit, parseRateLimitOptions } from './internal/readers.js';
import { RequestLimits } from './internal/request-limits.js';
import {
  controllerOf,
  policyIdentity,
  policySignature,
  type RouteCharge,
  type RouteLimit,
  routeOf,
} from './internal/routes.js';
import {
  RATE_LIMIT_GLOBAL,
  RATE_LIMIT_METADATA,
  SKIP_RATE_LIMIT_METADATA,
} from './rate-limit.constants.js';
import type {
  RateLimitOptions,
  RateLimitScope,
  RateLimitTarget,
  RateLimitTargetOptions,
} from './rate-limit.interfaces.js';

/** Injection token of the parsed module options. */
export const RATE_LIMIT_CONFIG: unique symbol = Symbol('RATE_LIMIT_CONFIG');

/** A handler, as `ExecutionContext.getHandler()` returns it. */
type Handler = Function;

/** Resolves handlers and hands out limiters; the guard's only dependency. */
@Injectable()
export class RateLimitService implements OnModuleInit {
  /** Reports a `count` function that throws, once (FLOODGATE_HOOK_ERROR). */
  readonly countWarning = new CountWarning('RateLimitModule');
  /** One limiter per distinct policy set (bounded: policy functions may make many). */
  readonly limiters = new BoundedCache<string, RateLimiter>();
  private readonly scopedPolicies = new BoundedCache<string, Policy>();
  private readonly routes = new Map<Type, Map<Handler, RouteLimit>>();
  private readonly parsed = new WeakMap<object, ParsedRoute>();
  /**
   * One request's limits, from plan to outcome: the steps RateLimitGuard (and its subclasses)
   * runs, and the lookup behind reset, block and unblock. Not part of the documented API.
   */
  readonly requests: RequestLimits = new RequestLimits(this);

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
    checkHandlers(this.discovery, this.scanner, this.reflector, this.global, {
      route: (target, handler) => this.route(target, handler),
      parse: (options, where) => void this.parse(options, where),
    });
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
  limiter(policies: readonly Policy[], where = 'RateLimitModule', shadow = false): RateLimiter {
    const signature = policySignature(policies);
    return this.limiters.get(shadow ? `shadow\n${signature}` : signature, () =>
      buildLimiter(
        this.config.store,
        policies,
        shadow ? shadowOptions(this.config.limiterOptions) : this.config.limiterOptions,
        where,
      ),
    );
  }

  /**
   * Resets the key `target` (an ExecutionContext, or a request the guard limited) resolves to:
   * every policy set it is charged (or the one with `options.policy`) is back to full capacity,
   * its block lifted, and the local denied-key cache entry dropped. Use it after a captcha or a
   * successful login.
   */
  async reset(target: RateLimitTarget, options?: RateLimitTargetOptions): Promise<void> {
    const charges = await this.requests.targetCharges(target, options);
    // A set merged with others under its key: its counters only (and the shared call's
    // denied-cache entry); the shared block stays.
    await Promise.all(
      charges.map(({ limiter, part, key }) => {
        if (part) limiter.deniedCache?.forget(key);
        return (part ?? limiter).reset(key);
      }),
    );
  }

  /** Blocks the key `target` resolves to for `duration` (or `'forever'`): 429 `reason: 'blocked'`. */
  async block(
    target: RateLimitTarget,
    duration: Duration | 'forever',
    options?: RateLimitTargetOptions,
  ): Promise<void> {
    const charges = await this.requests.targetCharges(target, options);
    await Promise.all(charges.map(({ limiter, key }) => limiter.block(key, duration)));
  }

  /** Lifts a block (by hand or a lockout) on the key `target` resolves to. */
  async unblock(target: RateLimitTarget, options?: RateLimitTargetOptions): Promise<void> {
    const charges = await this.requests.targetCharges(target, options);
    await Promise.all(charges.map(({ limiter, key }) => limiter.unblock(key)));
  }

  /**
   * Forgets every key of every limiter the module holds (one per distinct policy set: every
   * route's, the module's, and those of policies chosen per request, up to the newest 1 000
   * sets), blocks and bans included: `limiter.resetAll()` of each, one after another. Answers
   * how many storage keys went. On Redis each is a SCAN of every master, slow on big keyspaces
   * (docs/adapters.md). Failures are thrown.
   *
   * @example
   * ```ts
   * await rateLimitService.resetAll(); // e.g. from an admin endpoint, or between e2e tests
   * ```
   */
  async resetAll(): Promise<number> {
    let deleted = 0;
    for (const limiter of [...this.limiters.values()]) deleted += await limiter.resetAll();
    return deleted;
  }

  /**
   * Overrides a policy's parameters (by its name) for the key `target` resolves to, in every set
   * of policies that holds it (the module needs `liveLimits: true`): every process's next
   * decision for that key uses them, its counts carried as `options.carry` says.
   *
   * @example
   * ```ts
   * await this.rateLimit.setLimit(request, { policy: 'per-month', limit: 50_000 }, { carry: 'additive' });
   * ```
   */
  async setLimit(
    target: RateLimitTarget,
    override: LimitOverride,
    options: SetLimitOptions & Pick<RateLimitTargetOptions, 'handler' | 'key'> = {},
  ): Promise<void> {
    const { handler, key: every, ...limitOptions } = options;
    const policy = typeof override?.policy === 'string' ? override.policy : undefined;
    const charges = await this.requests.targetCharges(target, { policy, handler });
    await Promise.all(
      charges.map(({ limiter, key }) =>
        limiter.setLimit(everyKey(every) ?? key, override, limitOptions),
      ),
    );
  }

  /** Drops the overrides of the key `target` resolves to (every set, or `options.policy`'s). */
  async clearLimit(
    target: RateLimitTarget,
    options: ClearLimitOptions & RateLimitTargetOptions = {},
  ): Promise<void> {
    const { handler, policy, key: every, ...limitOptions } = options;
    const charges = await this.requests.targetCharges(target, { policy, handler });
    await Promise.all(
      charges.map(({ limiter, key }) => limiter.clearLimit(everyKey(every) ?? key, limitOptions)),
    );
  }

  /** The effective parameters, by policy name, of every policy the key `target` resolves to is charged. */
  async getLimit(
    target: RateLimitTarget,
    options?: RateLimitTargetOptions,
  ): Promise<Record<string, EffectiveLimit>> {
    const { key: every, ...targetOptions } = options ?? {};
    const charges = await this.requests.targetCharges(target, targetOptions);
    const limits = await Promise.all(
      charges.map(({ limiter, key }) => limiter.getLimit(everyKey(every) ?? key)),
    );
    return Object.assign({}, ...limits);
  }

  /** How a subclass's `getPolicies` answer is charged when the handler has no `@RateLimit`. */
  defaultCharge(route: RouteLimit): RouteCharge {
    const { config } = this;
    return {
      policies: [],
      dynamic: undefined,
      scope: 'route',
      keys: route.keys,
      count: config.count,
      shadow: config.shadow,
    };
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
    return this.scopedPolicies.get(`${label}\n${policyIdentity(policy)}`, () =>
      Object.freeze({ ...policy, id }),
    );
  }

  private resolveRoute(target: Type, handler: Handler): RouteLimit {
    const handlerWhere = `${target.name}.${handler.name}`;
    const own = this.reflector.get<RateLimitOptions | undefined>(RATE_LIMIT_METADATA, handler);
    const inherited = this.reflector.get<RateLimitOptions | undefined>(RATE_LIMIT_METADATA, target);
    const options = own ?? inherited;
    const where = own !== undefined ? handlerWhere : target.name;
    const parsed = options === undefined ? undefined : this.parse(options, where);
    const config = this.config;
    const charges: RouteCharge[] = (parsed?.limits ?? []).map((limit, i) => ({
      policies: limit.policies,
      dynamic: limit.dynamic,
      scope: limit.scope,
      keys: parsed!.keys[i]!,
      count: limit.count ?? config.count,
      shadow: limit.shadow ?? config.shadow,
      access: limit.access.allow || limit.access.deny ? limit.access : undefined,
    }));
    const moduleCharge: RouteCharge | undefined =
      (config.policies || config.dynamic) && !parsed?.override
        ? {
            policies: config.policies ?? [],
            dynamic: config.dynamic,
            scope: config.scope,
            keys: config.keys,
            count: config.count,
            shadow: config.shadow,
          }
        : undefined;
    if (moduleCharge) for (const charge of charges) checkNames(moduleCharge, charge, where);
    const skip = this.readSkip(target, handler, [
      ...(moduleCharge?.policies ?? []),
      ...charges.flatMap((c) => c.policies),
    ]);
    return {
      where: handlerWhere,
      route: routeOf(target, handler),
      controller: controllerOf(target),
      skip,
      module: moduleCharge,
      own: charges[0],
      more: charges.slice(1),
      policies: charges[0]?.policies ?? config.policies,
      keys: charges[0]?.keys ?? config.keys,
      cost: parsed?.cost ?? 1,
      settle: parsed?.settle,
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

  /**
   * Parses a decorator's options once and builds its limiters and key sources (so both fail at
   * bootstrap); policies chosen per request are checked when they are chosen.
   */
  private parse(options: RateLimitOptions, where: string): ParsedRoute {
    let parsed = this.parsed.get(options);
    if (!parsed) {
      const result = parseRateLimitOptions(options, where);
      const limits = result.limits.map((limit) =>
        limit.dynamic
          ? limit
          : { ...limit, policies: this.limiter(limit.policies, `@RateLimit(${where})`).policies },
      );
      const keys = limits.map((limit) =>
        limit.key === undefined
          ? this.config.keys
          : parseKeyOptions<ExecutionContext>(
              { ...this.config.keyOptions, key: limit.key },
              `@RateLimit(${where})`,
            ),
      );
      parsed = { ...result, limits, keys };
      this.parsed.set(options, parsed);
    }
    return parsed;
  }
}

/** A decorator's options, parsed, with each limit's key sources. */
interface ParsedRoute extends ParsedRateLimit {
  readonly keys: readonly KeyConfig<ExecutionContext>[];
}

/** Limiter options whose `onDecision` hook sees decisions with `shadow: true`. */
function shadowOptions(
  options: RateLimitConfig['limiterOptions'],
): RateLimitConfig['limiterOptions'] {
  return options.hooks
    ? { ...options, hooks: shadowHooks(options.hooks) as RateLimiterHooks }
    : options;
}

/** `options.key`: '*' (every key), or undefined for the request's own key; anything else is refused. */
function everyKey(value: unknown): '*' | undefined {
  if (value === undefined || value === '*') return value;
  throw new RateLimitConfigError(
    'FLOODGATE_INVALID_OPTION',
    'RateLimitService.options.key',
    value,
    `RateLimitService.options.key must be '*' (every key) or absent, got ${JSON.stringify(value)}`,
  );
}
