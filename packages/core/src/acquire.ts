/**
 * The acquire loop: waits until a cost is admitted (Guava `acquire`), or gives up once waiting
 * longer would pass `maxWait` (Guava `tryAcquire(timeout)`).
 */
import type { Decision } from './decision.js';
import { durationMicros } from './duration.js';
import { describeValue, RateLimitArgumentError } from './errors.js';
import { ownValue } from './options.js';
import { ACQUIRE_OPTIONS, type AcquireOptions, readCost } from './rate-limiter-options.js';

/**
 * One attempt at admission: `slack` is what is left of the budget as the store's reserve slack
 * (whole µs; see `RateLimiter.acquire`).
 */
export type AdmissionAttempt = (cost: number, slack: number) => Promise<Decision>;

/**
 * Calls `attempt` until it admits, and resolves with the admitting decision after sleeping its
 * `delay`; resolves with a denial once waiting for its `retryAfter` would pass `maxWait`, or
 * when the cost can never be admitted (retryAfter −1).
 */
export async function waitForAdmission(
  options: AcquireOptions | undefined,
  attempt: AdmissionAttempt,
): Promise<Decision> {
  const cost = readCost(options, ACQUIRE_OPTIONS);
  const maxWait = options === undefined ? undefined : ownValue(options, 'maxWait');
  let budget = Number.POSITIVE_INFINITY;
  if (maxWait !== undefined) {
    const micros = durationMicros(maxWait, true);
    if (typeof micros === 'string') {
      throw new RateLimitArgumentError(
        'maxWait',
        maxWait,
        `maxWait must be ${micros}, got ${describeValue(maxWait)}`,
      );
    }
    budget = micros / 1000;
  }
  const started = performance.now();
  for (;;) {
    const waited = performance.now() - started;
    const decision = await attempt(cost, reserveSlack(budget - waited));
    if (decision.allowed) {
      if (decision.delay > 0) await sleep(decision.delay);
      return decision;
    }
    // A block is not waited out: it is a decision about the key, not a rate.
    if (decision.retryAfter < 0 || decision.reason === 'blocked') return decision;
    if (performance.now() - started + decision.retryAfter > budget) return decision;
    await sleep(decision.retryAfter);
  }
}

/** What is left of acquire's budget (ms) as the store's reserve slack: whole µs, rounded down. */
function reserveSlack(leftMs: number): number {
  if (leftMs === Number.POSITIVE_INFINITY) return Number.MAX_SAFE_INTEGER;
  return Math.max(0, Math.floor(leftMs * 1000));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.ceil(ms)));
}
