/**
 * `app.use(loadShedder({ criticality }))`: overload protection for Express, thin over
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
import type { Request, RequestHandler } from 'express';

declare global {
  namespace Express {
    interface Request {
      /** The load shedder's decision for this request. */
      overload?: AdaptiveDecision;
    }
  }
}

/** `limiter`, `criticality` (a class or `(req) => class`) and `skip`. */
export type LoadShedderOptions = HttpLoadShedderOptions<Request>;

/** The middleware, with the adaptive limit it admits under (`limiter.limit`, `limiter.inFlight`). */
export type LoadShedderMiddleware = RequestHandler & { readonly limiter: AdaptiveConcurrency };

/**
 * Express middleware that sheds requests when the service is overloaded: 503 with
 * `Retry-After` and an RFC 9457 problem body. Errors (a throwing `criticality`) go to `next`.
 *
 * @example
 * ```ts
 * app.use(loadShedder({ criticality: (req) => (req.path.startsWith('/checkout') ? 'critical' : 'default') }));
 * ```
 */
export function loadShedder(options: LoadShedderOptions = {}): LoadShedderMiddleware {
  const config = parseLoadShedderOptions<Request>(options, 'loadShedder');
  const middleware: RequestHandler = function loadShedder(req, res, next) {
    let pending: ReturnType<typeof shedRequest>;
    try {
      pending = shedRequest(config, req);
    } catch (error) {
      next(error);
      return;
    }
    if (pending === undefined) {
      next();
      return;
    }
    const answer = (decision: AdaptiveDecision) => {
      req.overload = decision;
      if (decision.lease === undefined) {
        const shed = overloadedAnswer(decision);
        res.status(shed.status).set(shed.headers).end(JSON.stringify(shed.problem));
        return;
      }
      releaseWhenFinished(res, decision.lease);
      next();
    };
    if (pending instanceof Promise) pending.then(answer, next);
    else answer(pending);
  };
  return Object.assign(middleware, { limiter: config.limiter });
}
