/**
 * @floodgate/express — `app.use(rateLimit({ policies }))`. A thin layer over @floodgate/core:
 * the core resolves keys, decides and formats headers and problem bodies; this file only reads
 * an Express request and writes an Express response.
 */
import { type Decision } from '@floodgate/core';
import {
  AccessDeniedError,
  applyCheckHeaders,
  checkHttpRequest,
  deniedProblem,
  type HttpCheck,
  type HttpRateLimitOptions,
  type HttpRequestView,
  PROBLEM_CONTENT_TYPE,
  parseHttpRateLimitOptions,
  type RateLimitControl,
  rateLimitControl,
  refundByOutcome,
  releaseWhenDone,
  UnknownAppKeyError,
  waitForDelay,
} from '@floodgate/core/http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

declare global {
  namespace Express {
    interface Request {
      /** The decision of the last rate limiter this request passed through. */
      rateLimit?: Decision;
    }
  }
}

/** Replaces the default 429 response; the rate-limit headers are already set. */
export type OnLimited = (
  req: Request,
  res: Response,
  next: NextFunction,
  decision: Decision,
) => unknown;

/**
 * Options: `policies` (+ `store`, default `memoryStore()`, and any other RateLimiter option) or
 * `limiter`; `key`, `headers`, `skip`, `cost`, `count`, `allow`, `deny`, `onLimited` and the
 * key options. See the README.
 */
export type RateLimitOptions = HttpRateLimitOptions<Request, OnLimited, Response>;

/** The middleware, with `resetKey(req)`, `limiter` and `limiterFor(req)`. */
export type RateLimitMiddleware = RequestHandler & RateLimitControl<Request>;

/** The client as Express sees it: `req.ip` honours the app's `trust proxy` setting. */
function requestView(req: Request): HttpRequestView {
  return {
    ip: req.ip ?? req.socket.remoteAddress,
    headers: req.headers,
    // A getter: Express 5 parses the query string on every read, and only `appKey` needs it.
    get query() {
      return req.query as Record<string, unknown>;
    },
    user: (req as { user?: unknown }).user,
    trustProxy: Boolean(req.app.get('trust proxy')),
    trustsEveryProxy: req.app.get('trust proxy') === true,
  };
}

/**
 * Express middleware that rate-limits every request it sees. Every error after it starts (a
 * key function, the store, a throwing or rejecting `onLimited`) goes to `next(err)`: Express 4
 * does not catch a rejected middleware promise.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const config = parseHttpRateLimitOptions<Request, OnLimited, Response>(options, 'rateLimit');
  const middleware: RequestHandler = async function rateLimit(req, res, next) {
    try {
      const check = await checkHttpRequest(config, requestView(req), req, req);
      if (check === undefined) return next();
      if (!(await answer(check, req, res, next))) return;
    } catch (error) {
      if (
        (error instanceof UnknownAppKeyError || error instanceof AccessDeniedError) &&
        !res.headersSent
      ) {
        res.status(error.status).setHeader('Content-Type', error.contentType);
        res.end(JSON.stringify(error.problem));
        return;
      }
      return next(error);
    }
    next();
  };
  return Object.assign(middleware, rateLimitControl(config, requestView));

  /** Sets the decision and headers; answers a denial. True when the request goes on. */
  async function answer(
    check: HttpCheck,
    req: Request,
    res: Response,
    next: NextFunction,
  ): Promise<boolean> {
    const { decision, lease } = check;
    if (lease) releaseWhenDone(res, lease);
    refundByOutcome(config, check, res, req, res);
    req.rateLimit = decision;
    applyCheckHeaders(
      { get: (name) => res.getHeader(name), set: (name, value) => res.setHeader(name, value) },
      check,
      config.headers,
    );
    if (!decision.allowed && !decision.shadow) {
      if (config.onLimited) await config.onLimited(req, res, next, decision);
      else {
        const problem = deniedProblem(decision);
        res.status(problem.status).setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
        res.end(JSON.stringify(problem));
      }
      return false;
    }
    await waitForDelay(decision);
    return true;
  }
}
