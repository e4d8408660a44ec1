/**
 * `count`: which requests keep their charge once the response is known. The limiter charges
 * every admitted request up front (so concurrent requests can never overshoot); a request whose
 * outcome should not count is then refunded with `limiter.refund(key, { cost })`. Login
 * brute-force protection is `count: 'failed'`: only wrong passwords use up the budget.
 */
import type { ServerResponse } from 'node:http';
import { chargedWindowEnd } from '../charged-window.js';
import type { Clock } from '../clock.js';
import type { Decision } from '../decision.js';
import { emitWarning } from '../errors.js';
import { configError } from '../options.js';
import type { RateLimiter } from '../rate-limiter.js';
import { beforeEnd } from './before-end.js';
import { storeDecided } from './headers.js';
import type { HttpCheck } from './types.js';

export { chargedWindowEnd };

/**
 * Which admitted requests count: `'all'`; `'failed'` (status ≥ 400, or the client went away or
 * the response errored before it was sent); `'succeeded'` (status < 400, response sent); or a
 * function answering true for a request that counts. The function is asked when the response
 * is ended (`res` has its final status); a request that never got one (the client went away,
 * the response errored) counts without asking it, since its status is not known.
 */
export type CountOption<Req, Res = ServerResponse> =
  | 'all'
  | 'failed'
  | 'succeeded'
  | ((req: Req, res: Res) => boolean | Promise<boolean>);

/** @default 'all' */
export const DEFAULT_COUNT = 'all';

/** Reads `count` (undefined → 'all'). */
export function parseCountOption<Req, Res>(value: unknown, field: string): CountOption<Req, Res> {
  if (value === undefined) return DEFAULT_COUNT;
  if (value === 'all' || value === 'failed' || value === 'succeeded') return value;
  if (typeof value === 'function') return value as CountOption<Req, Res>;
  throw configError(
    field,
    value,
    "'all', 'failed', 'succeeded' or a function (req, res) => boolean",
  );
}

/** One admitted, charged request whose charge may be given back. */
export interface Charge {
  readonly limiter: RateLimiter;
  readonly key: string;
  readonly cost: number;
  /**
   * When the first window (fixed window, sliding-window bucket, sliding-log entry) this charge
   * went to ends, on `clock` (see `chargedWindowEnd`); undefined when the limiter has none. A
   * refund after it is dropped.
   */
  readonly windowEndsAt?: number | undefined;
  /** The store's clock (an injected one, else the process clock). */
  readonly clock?: Clock | undefined;
}

/** The clock a limiter's store decides on: an injected one, else the process clock. */
export function storeClock(limiter: Pick<RateLimiter, 'store'>): Clock {
  return (limiter.store as { clock?: Clock }).clock ?? Date.now;
}

/**
 * The `Charge` of an admitted request (`decision` the one that charged it, asked for at
 * `askedAt` on `storeClock(limiter)`), with its window's end on the store's clock (an injected
 * one, else the process clock), for `refundUncounted`. Without `askedAt` the end is counted
 * from now, which a stall between the decision and this call makes late.
 */
export function chargeOf(
  limiter: RateLimiter,
  key: string,
  cost: number,
  decision: Decision,
  askedAt?: number,
): Charge {
  const clock = storeClock(limiter);
  const windowEndsAt = chargedWindowEnd(limiter, decision, clock, askedAt);
  return { limiter, key, cost, windowEndsAt, clock };
}

/** How a response ended, for `count`. */
type Outcome = 'sent' | 'aborted';

/** Warns once per middleware that its `count` function failed (the request then counts). */
export class CountWarning {
  private warned = false;
  constructor(private readonly where: string) {}
  /** Reports `error` the first time only (FLOODGATE_HOOK_ERROR). */
  report(error: unknown): void {
    if (this.warned) return;
    this.warned = true;
    emitWarning(
      'FLOODGATE_HOOK_ERROR',
      `${this.where}.count threw or rejected (the request was counted; further errors are ignored): ${(error as Error)?.message ?? error}`,
    );
  }
}

/**
 * Arranges the refund of `charge` when `response`'s outcome should not count under `count`.
 * `response.end(...)` waits for the decision and the refund (at most RELEASE_WAIT_MAX_MS, with the
 * response's other settlements: before-end.ts), so a
 * client that retries as soon as it has this answer finds its budget already given back; a
 * request that never gets a response (aborted, errored) is settled when the response closes.
 * Nothing here throws into the response: a refund the store cannot make is answered by the
 * limiter's failure policy (and reported through its hooks); a `count` function that throws or
 * rejects counts the request and is reported once (FLOODGATE_HOOK_ERROR).
 * Does nothing for `'all'` or a cost of 0 (nothing to give back).
 */
export function refundUncounted<Req, Res>(
  count: CountOption<Req, Res>,
  charge: Charge,
  response: ServerResponse,
  req: Req,
  res: Res,
  warning: CountWarning,
): void {
  if (count === 'all' || charge.cost === 0) return;
  let settled: Promise<unknown> | undefined;
  const settle = (outcome: Outcome): Promise<unknown> => {
    settled ??= counts(count, outcome, response, req, res).then(
      (counted) => (counted ? undefined : refund(charge)),
      (error: unknown) => warning.report(error),
    );
    return settled;
  };
  if (response.writableEnded) {
    void settle('sent');
    return;
  }
  if (response.closed || response.destroyed) {
    void settle('aborted');
    return;
  }
  response.once('close', () => void settle(response.writableEnded ? 'sent' : 'aborted'));
  beforeEnd(response, () => settle('sent'));
}

/** Whether a request with this outcome keeps its charge. */
async function counts<Req, Res>(
  count: Exclude<CountOption<Req, Res>, 'all'>,
  outcome: Outcome,
  response: ServerResponse,
  req: Req,
  res: Res,
): Promise<boolean> {
  if (typeof count === 'function') {
    // A request that never got its response has no status yet (only the framework's default,
    // 200 or 404): the function cannot judge it, and refunding every abort would give an
    // attacker free attempts (abort each one before its answer). It counts, as
    // express-rate-limit's requestWasSuccessful is only asked about finished responses.
    if (outcome === 'aborted') return true;
    return (await count(req, res)) !== false;
  }
  const failed = outcome === 'aborted' || response.statusCode >= 400;
  return count === 'failed' ? failed : !failed;
}

/**
 * Gives the charge back, unless its window (`windowEndsAt`) has ended; a failure is the limiter's to
 * answer, never the response's.
 */
function refund(charge: Charge): Promise<unknown> {
  const { windowEndsAt, clock = Date.now } = charge;
  if (windowEndsAt !== undefined && clock() >= windowEndsAt) return Promise.resolve();
  return charge.limiter.refund(charge.key, { cost: charge.cost }).catch(() => undefined);
}

/** What `refundByOutcome` needs of the parsed adapter config. */
export interface CountConfig<Req, Res> {
  readonly limiter: RateLimiter | undefined;
  readonly count: CountOption<Req, Res>;
  readonly countWarning: CountWarning;
}

/**
 * The adapters' step after an admitted request: arranges its refund under `count`. Only a
 * request the rate policies charged can be refunded: not a skipped or denied one (a denial
 * charges nothing), not one refused for concurrency (its rate decision was a read), not one
 * admitted by `onStoreError: 'open'` (no store charged it).
 */
export function refundByOutcome<Req, Res>(
  config: CountConfig<Req, Res>,
  check: Pick<HttpCheck, 'key' | 'cost' | 'decision' | 'rate' | 'limiter' | 'askedAt'>,
  response: ServerResponse,
  req: Req,
  res: Res,
): void {
  const { count } = config;
  // The check's limiter: with a policies function, the one for the request's set.
  const { rate, decision, limiter } = check;
  if (count === 'all' || limiter === undefined || rate === undefined) return;
  if (!decision.allowed || !rate.allowed || !storeDecided(rate)) return;
  refundUncounted(
    count,
    chargeOf(limiter, check.key, check.cost, rate, check.askedAt),
    response,
    req,
    res,
    config.countWarning,
  );
}
