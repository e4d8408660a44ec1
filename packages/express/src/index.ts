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
  exposeDecision,
  type HttpCheck,
  type HttpRateLimitOptions,
  type HttpRequestView,
  PROBLEM_CONTENT_TYPE,
  parseHttpRateLimitOptions,
  type RateLimitControl,
  rateLimitControl,
  refundByOutcome,
  releaseWhenDone,
  settleAfterResponse,
  UnknownAppKeyError,
  waitForDelay,
} from '@floodgate/core/http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

declare global {
  namespace Express {
    interface Request {
      /** The decision of the last rate limiter this request passed through. */
      rateLimit?: Decision;
      /** With stacked limiters: every limiter's decision for this request, in the order they ran (set once a second one decided). */
      rateLimits?: Decision[];
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

/**
 * The client as Express sees it: `req.ip` honours the app's `trust proxy` setting. Every field
 * is read on demand (and `ip` once): Express gives each request object a map of its own, so
 * every property read on `req` is a slow lookup, Express computes `req.ip` from X-Forwarded-For
 * on every read, and a key function needs none of them. A class keeps the getters off the
 * request path (an object literal with getters made closures per request).
 */
class ExpressRequestView implements HttpRequestView {
  private address: string | undefined | null = null;

  constructor(private readonly req: Request) {}

  get headers(): Request['headers'] {
    return this.req.headers;
  }

  get user(): unknown {
    return (this.req as { user?: unknown }).user;
  }

  get ip(): string | undefined {
    if (this.address === null) this.address = this.req.ip ?? this.req.socket.remoteAddress;
    return this.address;
  }

  // Express 5 parses the query string on every read, and only `appKey` needs it.
  get query(): Record<string, unknown> {
    return this.req.query as Record<string, unknown>;
  }

  get trustProxy(): boolean {
    return Boolean(this.req.app.get('trust proxy'));
  }

  get trustsEveryProxy(): boolean {
    return this.req.app.get('trust proxy') === true;
  }
}

function requestView(req: Request): HttpRequestView {
  return new ExpressRequestView(req);
}

/** Express's response as a HeaderTarget, without two closures per request. */
class ResponseHeaders {
  constructor(private readonly res: Response) {}
  get(name: string) {
    return this.res.getHeader(name);
  }
  set(name: string, value: string): void {
    this.res.setHeader(name, value);
  }
  sent(): boolean {
    return this.res.headersSent;
  }
}

/**
 * Express middleware that rate-limits every request it sees. Every error after it starts (a
 * key function, the store, a throwing or rejecting `onLimited`) goes to `next(err)`: Express 4
 * does not catch a rejected middleware promise. No `async` here: an admitted request costs one
 * `then` on the check, not an async frame per step.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const config = parseHttpRateLimitOptions<Request, OnLimited, Response>(options, 'rateLimit');
  // Returns nothing: a returned promise costs Express 5 a `then` per request, and every error,
  // `next`'s own included, is handed to `next(err)` here.
  const middleware: RequestHandler = function rateLimit(req, res, next) {
    checkHttpRequest(config, requestView(req), req, req).then(
      (check) => (check === undefined ? goOn(res, next) : answer(check, req, res, next)),
      (error: unknown) => fail(error, res, next),
    );
  };
  return Object.assign(middleware, rateLimitControl(config, requestView));

  /**
   * Sets the decision and headers, answers a denial, or waits for a shaping delay; then calls
   * `next` for a request that goes on. A failure goes to `fail`.
   */
  function answer(
    check: HttpCheck,
    req: Request,
    res: Response,
    next: NextFunction,
  ): void | Promise<void> {
    const { decision, lease } = check;
    try {
      if (lease) releaseWhenDone(res, lease);
      refundByOutcome(config, check, res, req, res);
      settleAfterResponse(config, check, res, req, res);
      exposeDecision(req, decision);
      applyCheckHeaders(new ResponseHeaders(res), check, config.headers);
      if (!decision.allowed && !decision.shadow) {
        if (!config.onLimited) {
          // Headers already out (a handler streamed early): no 429 can be sent any more, and
          // an error would only reach the error handler with the response half written. The
          // request is refused all the same: the response ends and no later handler runs.
          if (res.headersSent) {
            res.end();
            return;
          }
          const problem = deniedProblem(decision);
          res.status(problem.status).setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
          res.end(JSON.stringify(problem));
          return;
        }
        return Promise.resolve(config.onLimited(req, res, next, decision)).then(
          () => undefined,
          (error: unknown) => fail(error, res, next),
        );
      }
    } catch (error) {
      return fail(error, res, next);
    }
    if (decision.delay > 0 && !decision.shadow) {
      return waitForDelay(decision).then(() => goOn(res, next));
    }
    goOn(res, next);
  }
}

/** The request goes on to the next handler; `next` itself failing goes to `fail`. */
function goOn(res: Response, next: NextFunction): void {
  try {
    next();
  } catch (error) {
    fail(error, res, next);
  }
}

/** An error after the middleware started: a 403 problem for the refusals, else `next(error)`. */
function fail(error: unknown, res: Response, next: NextFunction): void {
  if (
    (error instanceof UnknownAppKeyError || error instanceof AccessDeniedError) &&
    !res.headersSent
  ) {
    res.status(error.status).setHeader('Content-Type', error.contentType);
    res.end(JSON.stringify(error.problem));
    return;
  }
  next(error);
}

export {
  type LoadShedderMiddleware,
  type LoadShedderOptions,
  loadShedder,
} from './load-shedder.js';
