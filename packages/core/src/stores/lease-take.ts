/**
 * Lease take (a quota lease; Lua mode '9', lua/include/engine.lua): up to `want` units of a
 * key taken in one atomic step, all-or-nothing across the limiter's policies. The grant is the
 * least room any policy has now (its `remaining`; 0 in debt), at most `want`, charged to every
 * policy exactly as a consume of that cost. This file is the TypeScript twin the memory store
 * runs, and the reader of the Redis reply.
 */
import type { Algorithm, CheckResult, Params } from '../algorithms/algorithm.js';
import { ALGORITHMS } from '../algorithms/index.js';
import type { StoreDecision, StoreResult } from '../decision.js';
import { RateLimitStoreError } from '../errors.js';
import { decodeDecision, type Unpacker } from './redis-reply.js';

/** A lease take's answer: the decision of the take, and how many units it granted. */
export interface LeaseTaken extends StoreDecision {
  /**
   * Units charged to every policy (0: none; then the decision is a denied consume of cost 1, or
   * the key's block). When > 0 the decision is admitted and describes every key after the charge.
   */
  readonly granted: number;
}

/**
 * The algorithm kinds whose policies can be leased (docs/algorithms.md#quota-leases): those whose
 * twin declares `leasable`.
 */
export const LEASE_KINDS: ReadonlySet<string> = new Set(
  Object.values(ALGORITHMS)
    .filter((a) => a.leasable)
    .map((a) => a.kind),
);

/** What the twin needs of a memory store's prepared limiter. */
export interface LeaseTakePlan {
  readonly algorithms: readonly Algorithm[];
  readonly params: readonly Params[];
}

/**
 * The twin of mode '9' over the policies' current `states` (undefined: no state): the grant
 * and each policy's result, as lua/include/engine.lua computes them. Pure: the caller writes
 * `results[i].next` (with its `ttl`) for every policy when `granted` > 0.
 */
export function takeLease(
  plan: LeaseTakePlan,
  states: readonly unknown[],
  now: number,
  want: number,
): { granted: number; results: CheckResult<unknown>[] } {
  const n = plan.algorithms.length;
  let granted = want;
  for (let i = 0; i < n; i++) {
    const room = plan.algorithms[i]!.check(states[i], now, 0, plan.params[i]!);
    const remaining = room.allowed ? room.remaining : 0;
    if (remaining < granted) granted = remaining;
  }
  const cost = granted > 0 ? granted : 1;
  const results: CheckResult<unknown>[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const algorithm = plan.algorithms[i]!;
    let r = algorithm.check(states[i], now, cost, plan.params[i]!);
    // Nothing is taken: a policy that would admit cost 1 describes its key as it stands.
    if (granted === 0 && r.allowed) r = algorithm.check(states[i], now, 0, plan.params[i]!);
    results[i] = r;
  }
  return { granted, results };
}

/** The tag of a lease take's reply, { 3, granted, five fields per policy }. */
const LEASE_REPLY = 3;

/**
 * Reads mode '9''s reply: { 3, granted, then per policy allowed, remaining, reset_after,
 * retry_after, delay }, or a blocked key's { 2, by, left } (granted 0).
 */
export function decodeLeaseTake(reply: unknown, n: number): LeaseTaken {
  if (Array.isArray(reply) && reply[0] === LEASE_REPLY && reply.length === 2 + 5 * n) {
    const granted = Number(reply[1]);
    const results: StoreResult[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const j = 2 + 5 * i;
      results[i] = {
        allowed: reply[j] === 1,
        remaining: Number(reply[j + 1]),
        resetAfter: Number(reply[j + 2]),
        retryAfter: Number(reply[j + 3]),
        delay: Number(reply[j + 4]),
      };
    }
    return { admitted: granted > 0, results, granted };
  }
  if (Array.isArray(reply) && reply[0] === 2) {
    const none: (Unpacker | undefined)[] = new Array(n).fill(undefined);
    return { ...decodeDecision(reply, none, 1), granted: 0 };
  }
  throw new RateLimitStoreError(
    `unexpected reply from the rate-limit script's lease take: ${JSON.stringify(reply)}`,
  );
}
