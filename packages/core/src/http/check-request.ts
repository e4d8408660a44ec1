/**
 * The per-request steps every HTTP adapter runs with its parsed config (options.ts): skip →
 * key → cost → consume (→ acquire a concurrency slot), then the headers of what was decided
 * and the wait a shaping policy asks for.
 */
import type { ConcurrencyDecision } from '../concurrency-limiter.js';
import type { Decision } from '../decision.js';
import { describeValue, RateLimitArgumentError } from '../errors.js';
import { isCost } from '../options.js';
import { ANSWER_TIMED_OUT, type RateLimiter } from '../rate-limiter.js';
import type { Store } from '../stores/store.js';
import { AccessDeniedError, checkAccess } from './access-list.js';
import { noteCharge } from './budget.js';
import { markSlotDenial } from './concurrency.js';
import { storeClock } from './count.js';
import type { RateLimitHeaderConfig } from './header-options.js';
import { applyRateLimitHeaders, type HeaderTarget } from './headers.js';
import { resolveKeyNow } from './key-now.js';
import { resolveKey } from './keys.js';
import type { HttpRateLimitConfig } from './options.js';
import { shadowCheck } from './shadow.js';
import type { HttpCheck, HttpRequestView } from './types.js';

/**
 * The cost of a request: the configured number, or the cost function's result, which must be
 * a non-negative integer (otherwise RateLimitArgumentError, which adapters pass to the
 * framework's error handling).
 */
export async function resolveCost<Req>(
  config: Pick<HttpRateLimitConfig<Req>, 'cost'>,
  req: Req,
): Promise<number> {
  if (typeof config.cost === 'number') return config.cost;
  const cost = await config.cost(req);
  if (!isCost(cost)) {
    throw new RateLimitArgumentError(
      'cost',
      cost,
      `the cost function returned ${describeValue(cost)}; expected a non-negative integer`,
    );
  }
  return cost;
}

/**
 * Runs the shared per-request steps: `deny` (→ AccessDeniedError), `allow` and `skip`
 * (→ undefined), key, cost, then, with `concurrency`,
 * one `acquire` first, and one `consume` only when a slot was granted: a request refused for
 * concurrency is never charged to the rate policies (their headers then come from a cost-0
 * `peek`), and a slot taken by a request the rate policies refuse is given back at once.
 * Errors from user functions and the store propagate to the adapter (after any slot is given
 * back). `message` is Node's request object (for the double-count diagnostic).
 */
export function checkHttpRequest<Req, Res = unknown>(
  config: HttpRateLimitConfig<Req, unknown, Res>,
  view: HttpRequestView,
  req: Req,
  message?: object,
): Promise<HttpCheck | undefined> {
  const check = checkEnforcing(config, view, req, message);
  return config.shadow ? check.catch((error) => letThroughInShadow(config, error)) : check;
}

/**
 * Shadow mode never refuses, and an error answered as a 500 is a refusal: a request whose key,
 * cost, skip or policies function fails goes on uncounted, reported once per middleware
 * (FLOODGATE_SHADOW_ERROR). A `deny` list is enforced in shadow mode too, so its 403 stands.
 */
function letThroughInShadow<Req, Res>(
  config: HttpRateLimitConfig<Req, unknown, Res>,
  error: unknown,
): undefined {
  if (error instanceof AccessDeniedError) throw error;
  config.diagnostics.warn(
    'FLOODGATE_SHADOW_ERROR',
    `a request was let through uncounted in shadow mode after it failed: ${(error as Error)?.message ?? String(error)}; the same request would fail when enforcing`,
  );
  return undefined;
}

/** checkHttpRequest without shadow mode's leniency. */
function checkEnforcing<Req, Res>(
  config: HttpRateLimitConfig<Req, unknown, Res>,
  view: HttpRequestView,
  req: Req,
  message: object | undefined,
): Promise<HttpCheck | undefined> {
  try {
    config.firstRequest.check(config.diagnostics);
    const limiter = config.limiter;
    // The common configuration has nothing to await before the store call: no list, no skip,
    // a fixed cost, one limiter. An async chain here cost a promise and a microtask per step.
    if (
      limiter !== undefined &&
      typeof config.cost === 'number' &&
      config.deny === undefined &&
      config.allow === undefined &&
      config.skip === undefined &&
      config.policySets === undefined &&
      config.concurrency === undefined
    ) {
      const key = resolveKeyNow(config, view, req);
      if (typeof key === 'string') return consumeNow(config, limiter, key, config.cost, message);
      return key.then((k) => consumeNow(config, limiter, k, config.cost as number, message));
    }
  } catch (error) {
    return Promise.reject(error);
  }
  return checkStepByStep(config, view, req, message);
}

/** checkHttpRequest's steps when an option may make any of them wait. */
async function checkStepByStep<Req, Res>(
  config: HttpRateLimitConfig<Req, unknown, Res>,
  view: HttpRequestView,
  req: Req,
  message: object | undefined,
): Promise<HttpCheck | undefined> {
  const access = await checkAccess(config, view, req);
  if (access === 'deny') throw new AccessDeniedError();
  if (access === 'allow') return undefined;
  if (config.skip !== undefined && (await config.skip(req))) return undefined;
  const key = await resolveKey(config, view, req);
  const cost = await resolveCost(config, req);
  const check = await decide(config, req, key, cost, message);
  return config.shadow ? shadowCheck(check) : check;
}

/** `decide` for one limiter and no concurrency, with one `then` on the store's answer. */
function consumeNow<Req, Res>(
  config: HttpRateLimitConfig<Req, unknown, Res>,
  limiter: RateLimiter,
  key: string,
  cost: number,
  message: object | undefined,
): Promise<HttpCheck> {
  if (config.budget !== undefined) noteCharge(config.diagnostics, message, config.budget);
  const askedAt = config.count === 'all' ? undefined : storeClock(limiter)();
  // No options object for the default cost: the limiter then has nothing to validate.
  return limiter.consume(key, cost === 1 ? undefined : { cost }).then((rate) => {
    const check: HttpCheck = {
      key,
      cost,
      decision: rate,
      rate,
      concurrency: undefined,
      lease: undefined,
      limiter,
      askedAt,
    };
    return config.shadow ? shadowCheck(check) : check;
  });
}

/** The decisions for one request with its key and cost (see checkHttpRequest). */
async function decide<Req, Res>(
  config: HttpRateLimitConfig<Req, unknown, Res>,
  req: Req,
  key: string,
  cost: number,
  message: object | undefined,
): Promise<HttpCheck> {
  // A policies function picks this request's limiter (and budget) by its policy set.
  const { limiter, budget } = config.policySets ? await config.policySets.limiterFor(req) : config;
  const concurrency = config.concurrency ? await config.concurrency.acquire(key) : undefined;
  if (concurrency !== undefined && !concurrency.allowed) {
    // Busy slots (a store's answer, not the failure policy's): when one frees is not known.
    if (concurrency.reason === undefined) markSlotDenial(concurrency);
    const rate = limiter ? await limiter.peek(key, { cost: 0 }) : undefined;
    return { key, cost, decision: concurrency, rate, concurrency, lease: undefined, limiter };
  }
  const lease = concurrency?.lease;
  let rate: Decision | undefined;
  let askedAt: number | undefined;
  try {
    if (limiter) {
      if (budget !== undefined) noteCharge(config.diagnostics, message, budget);
      if (config.count !== 'all') askedAt = storeClock(limiter)();
      rate = timedOutOnSameStore(concurrency, config.concurrency?.store, limiter)
        ? await limiter[ANSWER_TIMED_OUT](key, cost)
        : await limiter.consume(key, { cost });
    }
  } catch (error) {
    await lease?.release().catch(() => undefined);
    throw error;
  }
  if (rate !== undefined && !rate.allowed) {
    await lease?.release().catch(() => undefined);
    return { key, cost, decision: rate, rate, concurrency: undefined, lease: undefined, limiter };
  }
  const decision = rate ?? (concurrency as Decision);
  return { key, cost, decision, rate, concurrency, lease, limiter, askedAt };
}

/**
 * Whether the slot's call just timed out on the store connection the rate policies use: asking
 * that stalled store again would make the request wait a second timeout, so the rate policies'
 * failure policy answers at once (with `reason: 'timeout'`).
 */
function timedOutOnSameStore(
  concurrency: ConcurrencyDecision | undefined,
  leaseStore: Store | undefined,
  limiter: RateLimiter,
): boolean {
  if (concurrency?.reason !== 'timeout' || leaseStore === undefined) return false;
  return (leaseStore.connection ?? leaseStore) === (limiter.store.connection ?? limiter.store);
}

/** Sets the headers of every decision in `check` (the concurrency one as concurrent-requests). */
export function applyCheckHeaders(
  target: HeaderTarget,
  check: HttpCheck,
  config: RateLimitHeaderConfig,
): void {
  const key = check.key;
  // Only draft 8 puts the key in a header (`pk`): no context object per request otherwise.
  if (check.rate) {
    applyRateLimitHeaders(target, check.rate, config, config.standard === 'draft-8' ? { key } : {});
  }
  if (check.concurrency) {
    applyRateLimitHeaders(target, check.concurrency, config, {
      quotaUnit: 'concurrent-requests',
      key,
    });
  }
}

/** Waits for an admitted decision's shaping `delay` (resolves at once when there is none). */
export function waitForDelay(decision: Decision): Promise<void> {
  // Shadow mode shapes nothing either: it only measures.
  if (!(decision.delay > 0) || decision.shadow) return Promise.resolve();
  return new Promise((resolve) => setTimeout(resolve, Math.ceil(decision.delay)));
}
