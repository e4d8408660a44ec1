/**
 * What a rate-limit middleware exposes besides itself: `resetKey(req)` (after a captcha, a
 * password reset, a successful login) and its `limiter`.
 */
import type { RateLimiter } from '../rate-limiter.js';
import { resolveKey } from './keys.js';
import type { HttpRateLimitConfig } from './options.js';
import type { HttpRequestView } from './types.js';

/** The handle on a middleware's limiter (`Req`: Express `req`, Koa `ctx`, Fastify `request`). */
export interface RateLimitControl<Req> {
  /**
   * Forgets everything stored for the key `req` resolves to, under every policy of its set (and
   * its lockouts and blocks), and drops that key from this process's denied-key cache. Other
   * processes may answer a denial from their own cache for up to its `maxAge` (default 1 s).
   * Concurrency slots in flight are not released.
   */
  resetKey(req: Req): Promise<void>;
  /** The RateLimiter; `undefined` when `policies` is a function (see `limiterFor`) or with `concurrency` only. */
  readonly limiter: RateLimiter | undefined;
  /** The RateLimiter that decides for `req`: with a policies function, the one for its set. */
  limiterFor(req: Req): Promise<RateLimiter | undefined>;
}

/** The RateLimitControl of a parsed config; `view` reads the framework's request. */
export function rateLimitControl<Req, Res>(
  config: HttpRateLimitConfig<Req, unknown, Res>,
  view: (req: Req) => HttpRequestView,
): RateLimitControl<Req> {
  const limiterFor = async (req: Req): Promise<RateLimiter | undefined> =>
    config.policySets ? (await config.policySets.limiterFor(req)).limiter : config.limiter;
  return {
    limiter: config.limiter,
    limiterFor,
    async resetKey(req) {
      const key = await resolveKey(config, view(req), req);
      const limiter = await limiterFor(req);
      await limiter?.reset(key);
      // A denial cached under the key's previous plan must not outlive the reset either.
      config.policySets?.forget(key);
    },
  };
}
