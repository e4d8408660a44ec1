/** The types the HTTP helpers share: a request as the core sees it, and the outcome of checking one. */
import type { ConcurrencyDecision, Lease } from '../concurrency-limiter.js';
import type { Decision } from '../decision.js';
import type { RateLimiter } from '../rate-limiter.js';

/** What the core needs to know about a request; each adapter fills it in. */
export interface HttpRequestView {
  /** Client address as the framework resolved it (after its trusted-proxy rules). */
  readonly ip: string | undefined;
  /** Request headers, names in lower case (Node's `IncomingMessage.headers`). */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Parsed query string. */
  readonly query?: Readonly<Record<string, unknown>> | undefined;
  /** The authenticated principal (`req.user`, `ctx.state.user`), if any. */
  readonly user?: unknown;
  /**
   * Whether the framework trusts a proxy (Express `trust proxy`, Koa `app.proxy`); on Fastify,
   * whether it took this request's address from X-Forwarded-For (its peer is trusted).
   */
  readonly trustProxy: boolean;
  /**
   * Whether it trusts every hop (Express `trust proxy === true`, Koa `app.proxy` with
   * `maxIpsCount` 0, a Fastify `trustProxy` that trusts any address): the leftmost
   * X-Forwarded-For entry, which any client can write, is the IP.
   */
  readonly trustsEveryProxy?: boolean;
}

/** The outcome of checking one request. */
export interface HttpCheck {
  readonly key: string;
  readonly cost: number;
  /** The decision to expose and act on: a denial if there was one, else the rate decision. */
  readonly decision: Decision;
  /** The rate limiter's decision (undefined with `concurrency` only). */
  readonly rate: Decision | undefined;
  /** The concurrency decision (undefined without `concurrency`, or after a rate denial). */
  readonly concurrency: ConcurrencyDecision | undefined;
  /** The slot to release when the response ends (admitted with `concurrency`). */
  readonly lease: Lease | undefined;
  /** The limiter that decided: with a policies function, the one for the request's set. */
  readonly limiter: RateLimiter | undefined;
  /**
   * The store's clock when the charging `consume` was called (with a `count` other than
   * 'all'): where the charged window's end is counted from (count.ts `chargeOf`).
   */
  readonly askedAt?: number;
}
