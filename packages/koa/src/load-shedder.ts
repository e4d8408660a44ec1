/**
 * `app.use(loadShedder({ criticality }))`: overload protection for Koa, thin over
 * @floodgate/core/http. Each request takes a slot of an adaptive concurrency limit, released
 * when its response finishes (or the connection closes); a shed request gets a 503 problem.
 */
import type { AdaptiveConcurrency, AdaptiveDecision } from '@floodgate/core';
import {
  type LoadShedderOptions as HttpLoadShedderOptions,
  overloadedAnswer,
  parseLoadShedderOptions,
  releaseWhenFinished,
  shedRequest,
} from '@floodgate/core/http';
import type { Context, Middleware } from 'koa';

declare module 'koa' {
  interface DefaultState {
    /** The load shedder's decision for this request (@floodgate/koa). */
    overload?: AdaptiveDecision;
  }
}

/** `limiter`, `criticality` (a class or `(ctx) => class`) and `skip`; functions get the Koa context. */
export type LoadShedderOptions = HttpLoadShedderOptions<Context>;

/** The middleware, with the adaptive limit it admits under (`limiter.limit`, `limiter.inFlight`). */
export type LoadShedderMiddleware = Middleware & { readonly limiter: AdaptiveConcurrency };

/**
 * Koa middleware that sheds requests when the service is overloaded: 503 with `Retry-After`
 * and an RFC 9457 problem body. A throwing `criticality` rejects (Koa's error handling).
 *
 * @example
 * ```ts
 * app.use(loadShedder({ criticality: (ctx) => (ctx.path === '/pay' ? 'critical' : 'sheddable') }));
 * ```
 */
export function loadShedder(options: LoadShedderOptions = {}): LoadShedderMiddleware {
  const config = parseLoadShedderOptions<Context>(options, 'loadShedder');
  const middleware: Middleware = async function loadShedder(ctx, next) {
    const decision = await shedRequest(config, ctx);
    if (decision === undefined) return next();
    ctx.state.overload = decision;
    if (decision.lease === undefined) {
      const answer = overloadedAnswer(decision);
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = JSON.stringify(answer.problem);
      ctx.type = answer.headers['Content-Type'];
      return;
    }
    releaseWhenFinished(ctx.res, decision.lease);
    return next();
  };
  return Object.assign(middleware, { limiter: config.limiter });
}
