/**
 * @floodgate/express — `app.use(rateLimit({ policies }))`. A thin layer over @floodgate/core:
 * the core resolves keys, decides and formats headers and problem bodies; this file only reads
 * an Express request and writes an Express response.
 */
import { type Decision } from '@floodgate/core';
import {
  applyCheckHeaders,
  checkHttpRequest,
  deniedProblem,
  type HttpCheck,
  type HttpRateLimitOptions,
  type HttpRequestView,
  PROBLEM_CONTENT_TYPE,
  parseHttpRateLimitOptions,
  releaseWhenDone,
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
 * `limiter`; `key`, `headers`, `skip`, `cost`, `onLimited` and the key options. See the README.
 */
export type RateLimitOptions = HttpRateLimitOptions<Request, OnLimited>;

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
  };
}

/** Express middleware that rate-limits every request it sees. */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const config = parseHttpRateLimitOptions<Request, OnLimited>(options, 'rateLimit');
  return async function rateLimit(req, res, next) {
    let check: HttpCheck | undefined;
    try {
      check = await checkHttpRequest(config, requestView(req), req);
    } catch (error) {
      return next(error);
    }
    if (check === undefined) return next();
    const { decision, lease } = check;
    if (lease) releaseWhenDone(res, lease);
    req.rateLimit = decision;
    applyCheckHeaders(
      { get: (name) => res.getHeader(name), set: (name, value) => res.setHeader(name, value) },
      check,
      config.headers,
    );
    if (!decision.allowed) {
      if (config.onLimited) return config.onLimited(req, res, next, decision);
      const problem = deniedProblem(decision);
      res.status(problem.status).setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
      res.end(JSON.stringify(problem));
      return;
    }
    await waitForDelay(decision);
    next();
  };
}
