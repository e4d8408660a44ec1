/**
 * RateLimitGuard: consumes the route's limiter once per request, sets the headers through the
 * platform adapter (Express or Fastify alike), and throws RateLimitException on a denial.
 * Subclass it and override `getKey`, `getPolicies` or `throwRateLimitException`.
 */
import { type Decision, type Policy, RateLimitConfigError } from '@floodgate/core';
import {
  applyRateLimitHeaders,
  type HeaderTarget,
  type HttpRequestView,
  resolveCost,
  resolveKey,
  waitForDelay,
} from '@floodgate/core/http';
import { type CanActivate, type ExecutionContext, Injectable, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { RATE_LIMIT_GUARD_MARK } from './rate-limit.constants.js';
import { DECISION_PROPERTY } from './rate-limit.decorator.js';
import { RateLimitException } from './rate-limit.exception.js';
import { policySignature, RateLimitService, type RouteLimit } from './rate-limit.service.js';

/**
 * Set on the request: the limiters (policy set + key) already charged for it, so a global guard
 * and a `@UseGuards(RateLimitGuard)` on the same route charge once, not twice.
 */
const CHARGED = Symbol.for('floodgate.nestjs.charged');

type RequestLike = Record<PropertyKey, unknown> & {
  ip?: string;
  headers?: Record<string, string | string[] | undefined>;
  query?: Record<string, unknown>;
  user?: unknown;
};

@Injectable()
export class RateLimitGuard implements CanActivate {
  /** Lets the module recognise this class and its subclasses in `@UseGuards(...)`. */
  static readonly [RATE_LIMIT_GUARD_MARK] = true;

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
    // Only HTTP is limited; RPC, WebSocket and GraphQL contexts pass through untouched.
    if (context.getType() !== 'http') return true;
    const route = this.routeOf(context);
    if (route.skip) return true;
    const policies = await this.getPolicies(context);
    if (policies === undefined || policies.length === 0) return true;

    const request = context.switchToHttp().getRequest<RequestLike>();
    // A subclass's getKey may come back empty: such requests share the fallback bucket.
    const identity = (await this.getKey(context)) || route.keys.fallbackKey;
    const key = `${route.route}|${identity}`;
    if (!(request[CHARGED] instanceof Set)) request[CHARGED] = new Set<string>();
    const charged = request[CHARGED] as Set<string>;
    const mark = `${policySignature(policies)}\n${key}`;
    if (charged.has(mark)) return true;
    charged.add(mark);

    const cost = await resolveCost(route, context);
    const decision = await this.rateLimit.limiter(policies).consume(key, { cost });
    request[DECISION_PROPERTY] = decision;
    applyRateLimitHeaders(this.headerTarget(context), decision, this.rateLimit.headers);
    if (!decision.allowed) this.throwRateLimitException(context, decision);
    // Shaping policies admit now but ask the request to wait (nginx `delay=`).
    await waitForDelay(decision);
    return true;
  }

  /**
   * The caller's identity (without the route): by default the first of the route's key sources
   * that yields one (`'clientId'` reads `request.user`, so an auth guard must run first), else
   * the fallback key.
   */
  protected getKey(context: ExecutionContext): string | Promise<string> {
    const request = context.switchToHttp().getRequest<RequestLike>();
    return resolveKey(this.routeOf(context).keys, this.requestView(request), context);
  }

  /**
   * The policies this request is charged against: the handler's `@RateLimit`, else the
   * controller's, else the module's `policies`; `undefined` (or `[]`) leaves it unlimited.
   * Return the same policies for the same route: equal sets share one limiter.
   */
  protected getPolicies(
    context: ExecutionContext,
  ): readonly Policy[] | undefined | Promise<readonly Policy[] | undefined> {
    return this.routeOf(context).policies;
  }

  /** Throws the 429. Override to throw your own HttpException (the headers are already set). */
  protected throwRateLimitException(_context: ExecutionContext, decision: Decision): never {
    throw new RateLimitException(decision);
  }

  /** The route's resolved limits (computed once per handler). */
  protected routeOf(context: ExecutionContext): RouteLimit {
    return this.rateLimit.route(context.getClass(), context.getHandler());
  }

  /** The neutral view the core's key sources read; Express and Fastify requests alike. */
  protected requestView(request: RequestLike): HttpRequestView {
    return {
      ip: request.ip,
      headers: request.headers ?? {},
      query: request.query,
      user: request.user,
      trustProxy: trustsProxy(request),
    };
  }

  private headerTarget(context: ExecutionContext): HeaderTarget {
    const response = context.switchToHttp().getResponse();
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter) {
      return {
        get: (name) => adapter.getHeader(response, name),
        set: (name, value) => adapter.setHeader(response, name, value),
      };
    }
    // No HTTP adapter (e.g. a hand-made context): a Node response or a Fastify reply.
    return {
      get: (name) => (response.getHeader as (n: string) => string | undefined)(name),
      set: (name, value) =>
        typeof response.header === 'function'
          ? response.header(name, value)
          : response.setHeader(name, value),
    };
  }
}

/**
 * Whether the platform trusts a proxy, as it resolved `request.ip` (the core warns once when
 * X-Forwarded-For arrives at an app that trusts none). Express keeps a `trust proxy` setting;
 * Fastify does not expose `trustProxy`, but a trusted proxy makes `request.ip` differ from the
 * socket's address.
 */
function trustsProxy(request: RequestLike): boolean {
  const express = request.app as { get?: (name: string) => unknown } | undefined;
  if (express && typeof express.get === 'function') return Boolean(express.get('trust proxy'));
  const raw = request.raw as { socket?: { remoteAddress?: string } } | undefined;
  return raw?.socket !== undefined && request.ip !== raw.socket.remoteAddress;
}
