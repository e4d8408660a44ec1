/**
 * Charges a request's plan: enforced sets all-or-nothing (one store call per distinct key),
 * shadow sets after them (counted, never refusing), and remembers per request which handler
 * and policy sets were charged, so no second guard charges them again.
 */
import type { Decision } from '@floodgate/core';
import { shadowDecision, storeClock, storeDecided } from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import { requestOf, transportOf } from './rate-limit.context.js';
import type { RateLimitDecisionView } from './rate-limit.interfaces.js';
import { mergeDecisions } from './rate-limit.merge.js';
import type { KeyedCharge } from './rate-limit.plan.js';
import type { RateLimitService } from './rate-limit.service.js';

/** The result of charging a plan. */
export interface Charged {
  /** What the request gets: the enforced sets' decision, else the shadow sets' (`shadow: true`). */
  readonly decision: RateLimitDecisionView;
  /** Whether any set is enforced (else only shadow sets applied). */
  readonly enforced: boolean;
  /** The charges that took units (refunded when the outcome says the request does not count). */
  readonly charged: readonly KeyedCharge[];
}

/** Charges `charges` (`cost` units each); fills in each charge's limiter. */
export async function chargeAll(
  service: RateLimitService,
  charges: readonly KeyedCharge[],
  cost: number,
): Promise<Charged> {
  for (const c of charges) c.limiter = service.limiter(c.policies, 'RateLimitModule', c.shadow);
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

/**
 * Where a request's charges are remembered, so it is charged once per handler and policy set
 * whichever guard class (global, local, subclass) or interceptor runs: the HTTP request, the
 * GraphQL field's `info` (each field resolution, aliases included), the WebSocket call's args.
 */
const CHARGED = Symbol.for('floodgate.nestjs.charged');
const chargedByCall = new WeakMap<object, Set<string>>();

/** The marks of what this request (GraphQL field, WebSocket call) was already charged. */
export function marksOf(context: ExecutionContext): Set<string> {
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
