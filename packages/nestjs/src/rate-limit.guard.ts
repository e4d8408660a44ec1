/**
 * RateLimitGuard: charges a request once against every policy that applies to its handler
 * (the module's and the handler's `@RateLimit`), sets the headers through the platform adapter
 * (Express or Fastify alike; for GraphQL on the HTTP response), and throws a denial the
 * transport understands: RateLimitException (HTTP), a GraphQL error with `extensions.code`
 * `TOO_MANY_REQUESTS` (GraphQL), a `WsException` (WebSocket). Subclass it and override `getKey`,
 * `getPolicies` or `throwRateLimitException`.
 */
import { type Decision, type Policy, RateLimitConfigError } from '@floodgate/core';
import {
  accessDeniedProblem,
  applyRateLimitHeaders,
  checkAccess,
  type KeyConfig,
  resolveCost,
  storeDecided,
  waitForDelay,
} from '@floodgate/core/http';
import { type CanActivate, type ExecutionContext, Injectable, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DEFAULT_ERROR_MESSAGE } from './internal/options.js';
import { CHARGES, CONTEXT, type RecordedCharges } from './internal/request-limits.js';
import { localLimiters, policySignature, type RouteLimit } from './internal/routes.js';
import { RATE_LIMIT_GUARD_MARK } from './rate-limit.constants.js';
import {
  headerTarget,
  type RequestLike,
  requestOf,
  requestView,
  transportOf,
} from './rate-limit.context.js';
import { DECISION_PROPERTY } from './rate-limit.decorator.js';
import {
  forbidden,
  RateLimitException,
  RateLimitGraphQLError,
  rateLimitBody,
  TOO_MANY_REQUESTS,
} from './rate-limit.exception.js';
import { RateLimitService } from './rate-limit.service.js';

/**
 * Applies the module's policies and each route's `@RateLimit(...)`: one limiter call per
 * request (never two when a global and a route guard both apply), headers on the response, and
 * `RateLimitException` (429) when denied. Subclass it and override its protected hooks
 * (`getKey`, `getPolicies`, `throwRateLimitException`) to change a step.
 *
 * @example
 * ```ts
 * import type { ExecutionContext } from '@nestjs/common';
 * import { RateLimitGuard } from '@floodgate/nestjs';
 *
 * // Every request of a tenant shares one budget, whoever the caller is.
 * export class TenantRateLimitGuard extends RateLimitGuard {
 *   protected override getKey(context: ExecutionContext): string {
 *     const request = context.switchToHttp().getRequest<{ headers: Record<string, string> }>();
 *     return `tenant:${request.headers['x-tenant'] ?? 'none'}`;
 *   }
 * }
 * // then, on a controller: @UseGuards(TenantRateLimitGuard) with @RateLimit({ limit: 100, window: '1m' })
 * ```
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  /** Lets the module recognise this class and its subclasses in `@UseGuards(...)`. */
  static readonly [RATE_LIMIT_GUARD_MARK] = true;

  /** Whether every guard has run before this one (interceptor mode). */
  protected readonly afterGuards: boolean = false;

  constructor(
    @Optional() protected readonly rateLimit: RateLimitService,
    @Optional() protected readonly adapterHost?: HttpAdapterHost,
  ) {
    if (!rateLimit) {
      throw new RateLimitConfigError(
        'FLOODGATE_MISSING_OPTION',
        'RateLimitModule',
        undefined,
        'RateLimitGuard needs RateLimitModule: add RateLimitModule.forRoot({ store: memoryStore() }) ' +
          '(or forRootAsync) to the imports of your root module',
      );
    }
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    // HTTP, GraphQL and WebSocket contexts are limited; RPC passes through.
    const transport = transportOf(context);
    if (transport === undefined) return true;
    if (transport === 'http') requestOf(context)[CONTEXT] ??= context;
    const route = this.routeOf(context);
    if (route.skip === true || this.defersToLocal(context)) return true;
    const config = this.rateLimit.config;
    // `deny` (403, before any store call), then `allow` (skips, no headers), as the adapters do.
    if (config.access.deny !== undefined || config.access.allow !== undefined) {
      const view = requestView(context, requestOf(context));
      const access = await checkAccess(config.access, view, context);
      if (access === 'deny') throw await forbidden(context, accessDeniedProblem());
      if (access === 'allow') return true;
    }
    if (config.skip !== undefined && (await config.skip(context))) return true;

    const requests = this.rateLimit.requests;
    const sets = await requests.screenSets(
      context,
      await requests.appliedSets(
        context,
        route,
        await this.getPolicies(context),
        route.own ?? this.rateLimit.defaultCharge(route),
      ),
    );
    if (sets.length === 0) return true;
    const marks = requests.marksOf(context);
    const mark = `${route.route}\n${sets.map((s) => policySignature(s.policies)).join(';')}`;
    if (marks.has(mark)) return true;
    marks.add(mark);

    const charges = await requests.keyCharges(context, route, sets, (c, keys) =>
      this.getKey(c, keys),
    );
    const cost = await resolveCost(route, context);
    const { decision, enforced, charged } = await requests.charge(charges, cost);
    const request = requestOf(context);
    request[DECISION_PROPERTY] = decision;
    request[CHARGES] = { charges, decision } satisfies RecordedCharges;
    const target = headerTarget(context, this.adapterHost);
    // The first key names the client for draft 8's partition key (`pk`). Shadow sets send
    // headers only when the module's `headers` option asks for them.
    if (target && (enforced || config.headersGiven)) {
      applyRateLimitHeaders(target, decision, this.rateLimit.headers, { key: charges[0]?.key });
    }
    if (!decision.allowed && enforced) {
      await this.throwRateLimitException(context, decision);
      // An override that returned instead of throwing still denies.
      throw new RateLimitException(decision, rateLimitBody(decision, DEFAULT_ERROR_MESSAGE));
    }
    requests.settleAfterResponse(context, charged, cost);
    if (route.settle) requests.settleAtActualCost(context, charged, cost, route.settle);
    // Shaping policies admit now but ask the request to wait (nginx `delay=`).
    if (enforced) await waitForDelay(decision);
    return true;
  }

  /**
   * The caller's identity under `keys` (without scope): by default the first of the key
   * sources that yields one (`'clientId'` reads `request.user`, so an auth guard must run
   * first), else the fallback key. Override it to key every policy of the request your way.
   */
  protected getKey(
    context: ExecutionContext,
    keys?: KeyConfig<ExecutionContext>,
  ): string | Promise<string> {
    return this.defaultKey(context, keys);
  }

  private async defaultKey(
    context: ExecutionContext,
    keys?: KeyConfig<ExecutionContext>,
  ): Promise<string> {
    const config = keys ?? this.routeOf(context).keys;
    if (!this.afterGuards && this.rateLimit.config.onMissingPrincipal === 'error') {
      const view = requestView(context, requestOf(context));
      await this.checkPrincipal(context, config, view.user, view.headers);
    }
    return this.rateLimit.requests.resolveKey(context, config);
  }

  /**
   * The handler's own policies, charged on top of the module's (unless its `@RateLimit` says
   * `override: true`): the handler's `@RateLimit`, else its class's; `undefined` (or `[]`) for
   * none. Return the same policies for the same handler: equal sets share one limiter.
   */
  protected getPolicies(
    context: ExecutionContext,
  ): readonly Policy[] | undefined | Promise<readonly Policy[] | undefined> {
    const own = this.routeOf(context).own;
    return own && this.rateLimit.requests.policiesFor(own, context);
  }

  /**
   * Throws the denial (the headers are already set). Override to throw your own exception; an
   * async override is awaited, and one that returns without throwing still denies.
   */
  protected async throwRateLimitException(
    context: ExecutionContext,
    decision: Decision,
  ): Promise<never> {
    const message = this.errorMessage(context, decision);
    const transport = transportOf(context);
    if (transport === 'graphql') throw new RateLimitGraphQLError(message, decision);
    if (transport === 'ws') {
      const { WsException } = await import('@nestjs/websockets');
      throw new WsException({
        status: 'error',
        ...rateLimitBody(decision, message),
        code: TOO_MANY_REQUESTS,
      });
    }
    throw new RateLimitException(decision, rateLimitBody(decision, message));
  }

  /** The handler's resolved limits (computed once per handler). */
  protected routeOf(context: ExecutionContext): RouteLimit {
    return this.rateLimit.route(context.getClass(), context.getHandler());
  }

  private errorMessage(context: ExecutionContext, decision: Decision): string {
    const option = this.rateLimit.config.errorMessage;
    if (option === undefined) {
      if (decision.reason === 'banned') return 'Forbidden';
      return storeDecided(decision) ? DEFAULT_ERROR_MESSAGE : 'Service Unavailable';
    }
    return typeof option === 'function' ? option(context, decision) : option;
  }

  /**
   * A global instance steps aside when the handler or its class names a RateLimitGuard (or
   * interceptor) of another class in `@UseGuards`/`@UseInterceptors`: that one charges, with
   * its own keys and policies, and the request is not charged twice under two keys.
   */
  private defersToLocal(context: ExecutionContext): boolean {
    const local = localLimiters(context.getClass(), context.getHandler());
    return local.length > 0 && !local.includes(this.constructor);
  }

  /**
   * `'clientId'` finds no principal although the request carries credentials: this guard ran
   * before authentication, and falling back would put every such client into one bucket.
   */
  private async checkPrincipal(
    context: ExecutionContext,
    keys: KeyConfig<ExecutionContext>,
    user: unknown,
    headers: Readonly<Record<string, string | string[] | undefined>>,
  ): Promise<void> {
    if (!keys.sources.includes('clientId') || headers.authorization === undefined) return;
    const id = keys.clientId ? await keys.clientId(context) : principalId(user);
    if (id !== undefined && id !== null && id !== '') return;
    throw new RateLimitConfigError(
      'FLOODGATE_GUARD_ORDER',
      'key',
      'clientId',
      `RateLimitGuard on ${this.routeOf(context).where} keys by 'clientId', but the request carries ` +
        'an Authorization header and no principal (request.user) is set yet: the limiter ran before ' +
        'authentication. Use RateLimitModule.forRoot({ ..., global: true, mode: "interceptor" }) (runs ' +
        'after every guard), list the auth guard first in @UseGuards(AuthGuard, RateLimitGuard), or ' +
        "set onMissingPrincipal: 'fallback' to use the next key source",
    );
  }
}

function principalId(user: unknown): unknown {
  if (user === null || typeof user !== 'object') return undefined;
  const u = user as { id?: unknown; clientId?: unknown };
  return u.id ?? u.clientId;
}

export type { RequestLike };
