/**
 * Acting on the key a request resolves to, from application code: reset it (after a captcha,
 * a password reset, a successful login), block it or lift its block. Exactly the charges the
 * guard made for that request (each set's key and policies), or for an ExecutionContext the
 * guard has not seen yet, what it would charge.
 */
import { RateLimitArgumentError, type RateLimiter } from '@floodgate/core';
import type { ExecutionContext, Type } from '@nestjs/common';
import { requestOf, transportOf } from './rate-limit.context.js';
import {
  appliedSets,
  CHARGES,
  CONTEXT,
  type KeyedCharge,
  keyCharges,
  policiesFor,
  type RecordedCharges,
  resolveContextKey,
} from './rate-limit.plan.js';
import type { RateLimitService } from './rate-limit.service.js';

/** Which of a request's charges to act on. */
export interface RateLimitTargetOptions {
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

/** One call `target` resolves to: its key and limiter. */
export interface TargetCharge {
  readonly key: string;
  readonly limiter: RateLimiter;
  /** When `options.policy` names a set merged with others: a limiter of that set alone. */
  readonly part?: RateLimiter;
}

/** The limiter and key of each charge `target` resolves to (filtered by `options.policy`). */
export async function targetCharges(
  service: RateLimitService,
  target: RateLimitTarget,
  options: RateLimitTargetOptions = {},
): Promise<TargetCharge[]> {
  const request = isContext(target) ? requestOf(target) : (target as Record<PropertyKey, unknown>);
  // A request the guard let through uncharged (allow, skip) left its context for this.
  let context = isContext(target) ? target : (request?.[CONTEXT] as ExecutionContext | undefined);
  const recorded = options.handler
    ? undefined
    : (request?.[CHARGES] as RecordedCharges | undefined);
  if (options.handler) context = onHandler(context ?? request, options.handler);
  let charges: readonly KeyedCharge[];
  if (recorded !== undefined) charges = recorded.charges;
  else if (context !== undefined && transportOf(context) !== undefined) {
    const route = service.route(context.getClass(), context.getHandler());
    const own = route.own && (await policiesFor(route.own, context));
    const sets =
      route.skip === true
        ? []
        : await appliedSets(context, route, own, route.own ?? service.defaultCharge(route));
    charges = await keyCharges(service, context, route, sets, resolveContextKey);
  } else {
    throw new RateLimitArgumentError(
      'target',
      target,
      'RateLimitService: this request has not been through RateLimitGuard (no charges on it); ' +
        'pass the ExecutionContext, or call it from the handler or after the guard ran',
    );
  }
  if (options.policy === undefined) {
    return charges.map((c) => ({ key: c.key, limiter: limiterOf(service, c) }));
  }
  const named = (ps: readonly { name: string }[]) => ps.some((p) => p.name === options.policy);
  const chosen = charges.filter((c) => named(c.policies));
  if (chosen.length === 0) {
    throw new RateLimitArgumentError(
      'policy',
      options.policy,
      `RateLimitService: no policy named "${options.policy}" applies to this request ` +
        `(${charges.flatMap((c) => c.policies.map((p) => `"${p.name}"`)).join(', ') || 'none'})`,
    );
  }

  return chosen.map((c) => {
    const part = c.sets.filter(named).flat();
    // The named set shares its call with other sets under the same key (the module's `api`
    // beside a route's `captcha`): `part` is a limiter of its policies alone, for `reset`.
    return part.length < c.policies.length
      ? {
          key: c.key,
          limiter: limiterOf(service, c),
          part: service.limiter(part, 'RateLimitModule', c.shadow),
        }
      : { key: c.key, limiter: limiterOf(service, c) };
  });
}

function limiterOf(service: RateLimitService, c: KeyedCharge): RateLimiter {
  return c.limiter ?? service.limiter(c.policies, 'RateLimitModule', c.shadow);
}

/** `target` (a context or an HTTP request) as seen by another handler. */
function onHandler(
  target: object,
  [controller, method]: readonly [Type, string],
): ExecutionContext {
  const handler = (controller?.prototype as Record<string, unknown> | undefined)?.[method];
  if (typeof handler !== 'function') {
    throw new RateLimitArgumentError(
      'handler',
      method,
      `RateLimitService: ${controller?.name}.${method} is not a handler`,
    );
  }
  const base: ExecutionContext = isContext(target) ? target : httpContext(target);
  return Object.create(base, {
    getClass: { value: () => controller },
    getHandler: { value: () => handler },
  }) as ExecutionContext;
}

/** The ExecutionContext of an HTTP request, for key functions (no response: none is needed). */
function httpContext(request: object): ExecutionContext {
  const args = [request];
  const none = (): never => {
    throw new RateLimitArgumentError(
      'target',
      request,
      'RateLimitService: an HTTP request has no RPC or WebSocket side',
    );
  };
  return {
    getType: () => 'http',
    getArgs: () => args,
    getArgByIndex: (i: number) => args[i],
    switchToHttp: () => ({
      getRequest: () => request,
      getResponse: () => undefined,
      getNext: () => undefined,
    }),
    switchToRpc: none,
    switchToWs: none,
    getClass: none,
    getHandler: none,
  } as unknown as ExecutionContext;
}

function isContext(value: unknown): value is ExecutionContext {
  const v = value as Partial<ExecutionContext> | null;
  return (
    typeof v?.getType === 'function' &&
    typeof v.switchToHttp === 'function' &&
    typeof v.getHandler === 'function'
  );
}
