/**
 * One request's limits, from plan to outcome: which policy sets apply to its handler (the
 * module's, the handler's `@RateLimit` limits, each chosen per request when given as a
 * function, minus the skipped ones), each under its key and scope and merged per key; charging
 * them (enforced sets all-or-nothing, shadow sets counted after them); refunding by outcome
 * after the response; and finding the same charges again for the service's `reset`, `block`
 * and `unblock`. RequestLimits holds these steps; the guard and the service call it.
 */
import type { ServerResponse } from 'node:http';
import {
  type Decision,
  type Policy,
  RateLimitArgumentError,
  type RateLimiter,
} from '@floodgate/core';
import {
  accessDeniedProblem,
  type CountWarning,
  chargeOf,
  checkAccess,
  type KeyConfig,
  mergeDecisions,
  refundUncounted,
  resolveKey,
  type SettleConfig,
  settleAfterResponse as settleHttp,
  shadowDecision,
  storeClock,
  storeDecided,
  UnknownAppKeyError,
} from '@floodgate/core/http';
import type { ExecutionContext, Type } from '@nestjs/common';
import { requestOf, requestView, transportOf } from '../rate-limit.context.js';
import { forbidden } from '../rate-limit.exception.js';
import type {
  RateLimitCount,
  RateLimitDecisionView,
  RateLimitScope,
  RateLimitTarget,
  RateLimitTargetOptions,
} from '../rate-limit.interfaces.js';
import { policiesOf } from './readers.js';
import type { RouteCharge, RouteLimit } from './routes.js';

/** What RequestLimits needs from the service: resolved routes, scoped policies, limiters. */
export interface LimiterSource {
  /** How `handler` of `target` is limited. */
  route(target: Type, handler: Function): RouteLimit;
  /** How a subclass's `getPolicies` answer is charged when the handler has no `@RateLimit`. */
  defaultCharge(route: RouteLimit): RouteCharge;
  /** `policy` with its scope in its id. */
  scoped(policy: Policy, scope: RateLimitScope, route: RouteLimit): Policy;
  /** The RateLimiter of a policy set (one per distinct set). */
  limiter(policies: readonly Policy[], where?: string, shadow?: boolean): RateLimiter;
  /** Reports a `count` function that throws, once. */
  readonly countWarning: CountWarning;
}

/** One policy set that applies to a request, as declared (names as in headers). */
export interface AppliedSet {
  readonly policies: readonly Policy[];
  readonly charge: RouteCharge;
}

/** One limiter call: the caller's key and the (scoped) policies charged under it. */
export interface KeyedCharge {
  readonly key: string;
  readonly policies: Policy[];
  readonly count: RateLimitCount;
  readonly shadow: boolean;
  /**
   * The declared sets merged into this call (scoped), so `reset(target, { policy })` resets
   * the named set alone, not the module's budget that shares its key.
   */
  readonly sets: Policy[][];
  /** Set when the charge is made. */
  limiter?: RateLimiter;
  /**
   * The decision that charged this key's policies (set when they were charged): a refund
   * whose window it went to has ended is dropped (`chargeOf` in `@floodgate/core/http`).
   */
  decision?: Decision;
  /** The store's clock when that decision was asked for: the charged window's end counts from it. */
  askedAt?: number;
}

/** Where the guard leaves a request's charges (for `reset`, `block`, `unblock`). */
export const CHARGES = Symbol.for('floodgate.nestjs.charges');

/**
 * Where the guard leaves an HTTP request's ExecutionContext before `allow`, `skip` or a
 * denial can end its work: `reset(request)` from the handler of a request that was let through
 * uncharged (an allowlisted office login) still finds the keys it would have been charged.
 */
export const CONTEXT = Symbol.for('floodgate.nestjs.context');

/** What the guard left on a request: its charges and the decision it got. */
export interface RecordedCharges {
  readonly charges: readonly KeyedCharge[];
  readonly decision: Decision;
}

/** The result of charging a plan. */
export interface Charged {
  /** What the request gets: the enforced sets' decision, else the shadow sets' (`shadow: true`). */
  readonly decision: RateLimitDecisionView;
  /** Whether any set is enforced (else only shadow sets applied). */
  readonly enforced: boolean;
  /** The charges that took units (refunded when the outcome says the request does not count). */
  readonly charged: readonly KeyedCharge[];
}

/** One call `target` resolves to: its key and limiter. */
export interface TargetCharge {
  readonly key: string;
  readonly limiter: RateLimiter;
  /** When `options.policy` names a set merged with others: a limiter of that set alone. */
  readonly part?: RateLimiter;
}

/**
 * Where a request's charges are remembered, so it is charged once per handler and policy set
 * whichever guard class (global, local, subclass) or interceptor runs: the HTTP request, the
 * GraphQL field's `info` (each field resolution, aliases included), the WebSocket call's args.
 */
const CHARGED = Symbol.for('floodgate.nestjs.charged');
const chargedByCall = new WeakMap<object, Set<string>>();

/**
 * The per-request steps: which policy sets apply and under which keys, charging them, refunding
 * by outcome, and finding a request's charges again. One per RateLimitService.
 */
export class RequestLimits {
  constructor(private readonly source: LimiterSource) {}

  /**
   * The policy sets that apply: the module's, then the handler's limits (`own` as the guard's
   * `getPolicies` answered, charged as `ownCharge` says), each without the policies
   * `@SkipRateLimit(name)` names.
   */
  async appliedSets(
    context: ExecutionContext,
    route: RouteLimit,
    own: readonly Policy[] | undefined,
    ownCharge: RouteCharge,
  ): Promise<AppliedSet[]> {
    const sets: AppliedSet[] = [];
    if (route.module) {
      sets.push({ policies: await this.policiesFor(route.module, context), charge: route.module });
    }
    if (own !== undefined && own.length > 0) {
      sets.push({ policies: own, charge: ownCharge });
    }
    for (const charge of route.more) {
      sets.push({ policies: await this.policiesFor(charge, context), charge });
    }
    const skipped = route.skip === false || route.skip === true ? undefined : route.skip;
    return sets
      .map((set) =>
        skipped ? { ...set, policies: set.policies.filter((p) => !skipped.has(p.name)) } : set,
      )
      .filter((set) => set.policies.length > 0);
  }

  /**
   * The sets left once each limit's own lists are applied: a set whose `deny` lists the request
   * refuses it (403, before any store call), one whose `allow` lists it is dropped.
   */
  async screenSets(context: ExecutionContext, sets: readonly AppliedSet[]): Promise<AppliedSet[]> {
    const kept: AppliedSet[] = [];
    for (const set of sets) {
      const access = set.charge.access;
      if (access !== undefined) {
        const view = requestView(context, requestOf(context));
        const verdict = await checkAccess(
          {
            ...access,
            ipHeaders: set.charge.keys.ipHeaders,
            diagnostics: set.charge.keys.diagnostics,
          },
          view,
          context,
        );
        if (verdict === 'deny') throw await forbidden(context, accessDeniedProblem());
        if (verdict === 'allow') continue;
      }
      kept.push(set);
    }
    return kept;
  }

  /** A set's policies: as declared, or what its function chose for this request. */
  async policiesFor(charge: RouteCharge, context: ExecutionContext): Promise<readonly Policy[]> {
    if (charge.dynamic === undefined) return charge.policies;
    return policiesOf(await charge.dynamic(context), "policies (the function's answer)");
  }

  /**
   * One charge per key (sets under one key share one limiter call, unless their `count` or
   * `shadow` differ), policies scoped to the route or controller.
   */
  async keyCharges(
    context: ExecutionContext,
    route: RouteLimit,
    sets: readonly AppliedSet[],
    getKey: (
      context: ExecutionContext,
      keys: KeyConfig<ExecutionContext>,
    ) => string | Promise<string>,
  ): Promise<KeyedCharge[]> {
    const charges: KeyedCharge[] = [];
    for (const { policies, charge } of sets) {
      // A subclass's getKey may come back empty: such requests share the fallback bucket.
      const key = (await getKey(context, charge.keys)) || charge.keys.fallbackKey;
      const scoped = policies.map((p) => this.source.scoped(p, charge.scope, route));
      const same = charges.find(
        (c) => c.key === key && c.count === charge.count && c.shadow === charge.shadow,
      );
      if (same) {
        for (const p of scoped) {
          if (!same.policies.some((q) => q.id === p.id)) same.policies.push(p);
        }
        same.sets.push(scoped);
      } else {
        const { count, shadow } = charge;
        // `policies` grows as sets merge in; `sets` keeps each set apart.
        charges.push({ key, policies: [...scoped], count, shadow, sets: [scoped] });
      }
    }
    return charges;
  }

  /**
   * The caller's identity under `keys`: the first key source that yields one, else the fallback
   * key. An app key that `verifyAppKey` rejected (`unknownAppKey: 'refuse'`) is a 403.
   */
  resolveKey(context: ExecutionContext, keys: KeyConfig<ExecutionContext>): Promise<string> {
    const view = requestView(context, requestOf(context));
    return resolveKey(keys, view, context).catch(async (error: unknown) => {
      throw error instanceof UnknownAppKeyError ? await forbidden(context, error.problem) : error;
    });
  }

  /** Charges `charges` (`cost` units each); fills in each charge's limiter. */
  async charge(charges: readonly KeyedCharge[], cost: number): Promise<Charged> {
    for (const c of charges) c.limiter = this.limiterOf(c);
    const enforced = charges.filter((c) => !c.shadow);
    const shadows = charges.filter((c) => c.shadow);
    const decision = enforced.length > 0 ? await chargeTogether(enforced, cost) : undefined;
    if (decision !== undefined && !decision.allowed) {
      return { decision, enforced: true, charged: [] };
    }
    // Admitted by `onStoreError: 'open'`: no store charged it, nothing to give back.
    const charged = decision === undefined || storeDecided(decision) ? [...enforced] : [];
    let shadow: Decision | undefined;
    if (shadows.length > 0) {
      const answers = await Promise.all(shadows.map((c) => consume(c, cost)));
      answers.forEach((d, i) => {
        if (d.allowed && storeDecided(d)) charged.push(shadows[i]!);
      });
      shadow = mergeDecisions(answers);
    }
    return decision !== undefined
      ? { decision, enforced: true, charged }
      : { decision: shadowDecision(shadow!), enforced: false, charged };
  }

  /** The marks of what this request (GraphQL field, WebSocket call) was already charged. */
  marksOf(context: ExecutionContext): Set<string> {
    const transport = transportOf(context);
    if (transport === 'http') {
      const request = requestOf(context);
      if (!(request[CHARGED] instanceof Set)) request[CHARGED] = new Set<string>();
      return request[CHARGED] as Set<string>;
    }
    const holder = (transport === 'graphql' ? context.getArgByIndex(3) : null) ?? context.getArgs();
    let marks = chargedByCall.get(holder);
    if (!marks) {
      marks = new Set();
      chargedByCall.set(holder, marks);
    }
    return marks;
  }

  /**
   * Counting by outcome (`count: 'failed' | 'succeeded' | (context, response) => boolean`):
   * arranges the refund of each charge whose `count` says this request does not count, with the
   * core's `refundUncounted` (the Express, Koa and Fastify adapters' step) on the Node response
   * under Express's `res` or Fastify's `reply.raw`, before the response goes out, unless the
   * window it was charged to has ended. Nothing here can break the response (a failing refund
   * is the limiter's failure policy's, a throwing `count` function counts the request and is
   * reported once: FLOODGATE_HOOK_ERROR). HTTP only: GraphQL fields and WebSocket messages have
   * no response of their own, so they count.
   */
  settleAfterResponse(
    context: ExecutionContext,
    charged: readonly KeyedCharge[],
    cost: number,
  ): void {
    if (context.getType<string>() !== 'http') return;
    const response = context.switchToHttp().getResponse<{ raw?: ServerResponse }>();
    const raw = (response.raw ?? response) as ServerResponse;
    for (const charge of charged) {
      refundUncounted(
        charge.count,
        chargeOf(charge.limiter!, charge.key, cost, charge.decision!, charge.askedAt),
        raw,
        context,
        response as unknown,
        this.source.countWarning,
      );
    }
  }

  /**
   * `cost: { estimate, actual }`: once the HTTP response has finished, settles each charge at the
   * actual cost (`actual(context, response)` or a response header or trailer), as the Express,
   * Koa and Fastify adapters do; never delays the response. GraphQL and WebSocket calls keep
   * their estimate.
   */
  settleAtActualCost(
    context: ExecutionContext,
    charged: readonly KeyedCharge[],
    cost: number,
    settle: SettleConfig<ExecutionContext, unknown>,
  ): void {
    if (context.getType<string>() !== 'http') return;
    const response = context.switchToHttp().getResponse<{ raw?: ServerResponse }>();
    const raw = (response.raw ?? response) as ServerResponse;
    for (const { key, limiter, decision } of charged) {
      if (decision === undefined) continue;
      const check = { key, cost, decision, rate: decision, limiter };
      settleHttp({ settle }, check, raw, context, response as unknown);
    }
  }

  /**
   * The limiter and key of each charge `target` resolves to (filtered by `options.policy`):
   * exactly the charges the guard made for that request, or for an ExecutionContext the guard
   * has not seen yet, what it would charge.
   */
  async targetCharges(
    target: RateLimitTarget,
    options: RateLimitTargetOptions = {},
  ): Promise<TargetCharge[]> {
    const charges = await this.chargesOf(target, options);
    if (options.policy === undefined) {
      return charges.map((c) => ({ key: c.key, limiter: this.limiterOf(c) }));
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
            limiter: this.limiterOf(c),
            part: this.source.limiter(part, 'RateLimitModule', c.shadow),
          }
        : { key: c.key, limiter: this.limiterOf(c) };
    });
  }

  /** The charges the guard recorded on `target`'s request, else those it would make. */
  private async chargesOf(
    target: RateLimitTarget,
    options: RateLimitTargetOptions,
  ): Promise<readonly KeyedCharge[]> {
    const request = isContext(target)
      ? requestOf(target)
      : (target as Record<PropertyKey, unknown>);
    // A request the guard let through uncharged (allow, skip) left its context for this.
    let context = isContext(target) ? target : (request?.[CONTEXT] as ExecutionContext | undefined);
    const recorded = options.handler
      ? undefined
      : (request?.[CHARGES] as RecordedCharges | undefined);
    if (options.handler) context = onHandler(context ?? request, options.handler);
    if (recorded !== undefined) return recorded.charges;
    if (context === undefined || transportOf(context) === undefined) {
      throw new RateLimitArgumentError(
        'target',
        target,
        'RateLimitService: this request has not been through RateLimitGuard (no charges on it); ' +
          'pass the ExecutionContext, or call it from the handler or after the guard ran',
      );
    }
    const route = this.source.route(context.getClass(), context.getHandler());
    const own = route.own && (await this.policiesFor(route.own, context));
    const sets =
      route.skip === true
        ? []
        : await this.appliedSets(
            context,
            route,
            own,
            route.own ?? this.source.defaultCharge(route),
          );
    return this.keyCharges(context, route, sets, (c, keys) => this.resolveKey(c, keys));
  }

  /** The limiter of a charge: the one that charged it, else the one for its policies. */
  private limiterOf(c: KeyedCharge): RateLimiter {
    return c.limiter ?? this.source.limiter(c.policies, 'RateLimitModule', c.shadow);
  }
}

/** One store call per distinct key; several keys are charged all-or-nothing. */
async function chargeTogether(charges: readonly KeyedCharge[], cost: number): Promise<Decision> {
  if (charges.length === 1) return consume(charges[0]!, cost);
  // Different keys live under different hash tags, so no one script can charge them all:
  // read every budget first and charge none if any denies. Two requests racing between the
  // read and the charge can each be charged under one key and denied under another.
  const peeks = await Promise.all(charges.map((c) => c.limiter!.peek(c.key, { cost })));
  if (peeks.some((d) => !d.allowed)) return mergeDecisions(await lockOut(charges, peeks, cost));
  return mergeDecisions(await Promise.all(charges.map((c) => consume(c, cost))));
}

/** Charges one key's policies, keeping the decision that charged them (for a later refund). */
async function consume(charge: KeyedCharge, cost: number): Promise<Decision> {
  if (charge.count !== 'all') charge.askedAt = storeClock(charge.limiter!)();
  charge.decision = await charge.limiter!.consume(charge.key, { cost });
  return charge.decision;
}

/**
 * A peek never starts a lockout: a set with `blockDuration` that the peek found denying is
 * consumed, so the store blocks its key as it would under one key (a denied consume charges
 * nothing). Should that consume admit after all (a refund or a reset raced the peek), it is
 * refunded at once: the request is still refused.
 */
async function lockOut(
  charges: readonly KeyedCharge[],
  peeks: Decision[],
  cost: number,
): Promise<Decision[]> {
  return Promise.all(
    peeks.map(async (peek, i) => {
      const { limiter, key } = charges[i]!;
      if (peek.allowed || peek.reason === 'blocked' || !limiter!.policies.some((p) => p.lockout)) {
        return peek;
      }
      const decision = await limiter!.consume(key, { cost });
      if (decision.allowed && storeDecided(decision)) await limiter!.refund(key, { cost });
      return decision.allowed ? peek : decision;
    }),
  );
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
