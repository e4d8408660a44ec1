/**
 * @floodgate/koa — `app.use(rateLimit({ policies }))`. A thin layer over @floodgate/core: the
 * core resolves keys, decides and formats headers and problem bodies; this file only reads a
 * Koa context and writes its response.
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
import type { Context, Response as KoaResponse, Middleware, Next } from 'koa';

declare module 'koa' {
  interface DefaultState {
    /** The decision of the last rate limiter this request passed through (@floodgate/koa). */
    rateLimit?: Decision;
    /** With stacked limiters: every limiter's decision for this request, in the order they ran (set once a second one decided). */
    rateLimits?: Decision[];
  }
}

/** Replaces the default 429 response; the rate-limit headers are already set. */
export type OnLimited = (ctx: Context, next: Next, decision: Decision) => unknown;

/**
 * Options: `policies` (+ `store`, default `memoryStore()`, and any other RateLimiter option) or
 * `limiter`; `key`, `headers`, `skip`, `cost`, `count`, `allow`, `deny`, `onLimited` and the
 * key options. Functions receive the Koa context (`count` also gets `ctx.response`). See the README.
 */
export type RateLimitOptions = HttpRateLimitOptions<Context, OnLimited, KoaResponse>;

/** The middleware, with `resetKey(ctx)`, `limiter` and `limiterFor(ctx)`. */
export type RateLimitMiddleware = Middleware & RateLimitControl<Context>;

/** The client as Koa sees it: `ctx.ip` honours `app.proxy`. */
function requestView(ctx: Context): HttpRequestView {
  return {
    ip: ctx.ip || ctx.req.socket.remoteAddress,
    headers: ctx.headers,
    query: ctx.query,
    user: ctx.state.user,
    trustProxy: ctx.app.proxy === true,
    // Koa takes the leftmost X-Forwarded-For entry unless maxIpsCount says how many hops to trust.
    trustsEveryProxy: ctx.app.proxy === true && !(ctx.app.maxIpsCount > 0),
  };
}

/**
 * Koa middleware that rate-limits every request it sees; the decision is on
 * `ctx.state.rateLimit`. Errors (a throwing key function, a bad cost) are thrown to Koa's
 * error handling.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const config = parseHttpRateLimitOptions<Context, OnLimited, KoaResponse>(options, 'rateLimit');
  const middleware: Middleware = async function rateLimit(ctx, next) {
    let check: HttpCheck | undefined;
    try {
      check = await checkHttpRequest(config, requestView(ctx), ctx, ctx.req);
    } catch (error) {
      if (!(error instanceof UnknownAppKeyError || error instanceof AccessDeniedError)) throw error;
      ctx.status = error.status;
      ctx.type = error.contentType;
      ctx.body = JSON.stringify(error.problem);
      return;
    }
    if (check === undefined) return next();
    const { decision, lease } = check;
    if (lease) releaseWhenDone(ctx.res, lease);
    refundByOutcome(config, check, ctx.res, ctx, ctx.response);
    settleAfterResponse(config, check, ctx.res, ctx, ctx.response);
    exposeDecision(ctx.state, decision);
    applyCheckHeaders(
      {
        get: (name) => ctx.response.get(name) || undefined,
        set: (name, value) => ctx.set(name, value),
        sent: () => ctx.headerSent,
      },
      check,
      config.headers,
    );
    if (!decision.allowed && !decision.shadow) {
      if (config.onLimited) return config.onLimited(ctx, next, decision);
      if (ctx.headerSent) {
        // Headers already out: no 429 can be sent; the request is refused by ending the
        // response here, and Koa must not write a body of its own after it.
        ctx.respond = false;
        ctx.res.end();
        return;
      }
      const problem = deniedProblem(decision);
      ctx.status = problem.status;
      ctx.type = PROBLEM_CONTENT_TYPE;
      ctx.body = JSON.stringify(problem);
      return;
    }
    await waitForDelay(decision);
    await next();
  };
  return Object.assign(middleware, rateLimitControl(config, requestView));
}

export {
  type LoadShedderMiddleware,
  type LoadShedderOptions,
  loadShedder,
} from './load-shedder.js';
