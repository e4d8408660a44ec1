/**
 * What every adapter's `loadShedder(...)` shares: its options, the admission of one request
 * under an adaptive concurrency limit (by the request's criticality), the 503 answer of a shed
 * request (RFC 9457 problem + `Retry-After`), and the release of the slot when the response
 * finishes or the connection closes, which feeds the request's latency to the limit.
 */
import type { ServerResponse } from 'node:http';
import { configError, optionNames, readAs, readOptions } from '../options.js';
import {
  AdaptiveConcurrency,
  type AdaptiveConcurrencyOptions,
  type AdaptiveDecision,
  type AdaptiveLease,
} from '../overload/adaptive-concurrency.js';
import { type Criticality, readCriticality } from '../overload/criticality.js';
import { ceilSeconds } from './headers.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

/** `loadShedder(...)` options, the same in every adapter. */
export interface LoadShedderOptions<Req> {
  /**
   * The adaptive limit: an `adaptiveConcurrency(...)` (share one between middlewares to share
   * the limit) or its options. @default adaptiveConcurrency() — Gradient2, Netflix's defaults
   */
  limiter?: AdaptiveConcurrency | AdaptiveConcurrencyOptions;
  /**
   * The request's class: one for every request, or a function of the request (`undefined`
   * means 'default'). Critical requests are shed last. @default 'default'
   */
  criticality?: Criticality | ((req: Req) => Criticality | undefined);
  /** Requests for which this returns true pass without taking a slot (health checks). */
  skip?: (req: Req) => boolean;
}

/** The options read once, at construction. */
export interface LoadShedderConfig<Req> {
  readonly limiter: AdaptiveConcurrency;
  readonly criticality: (req: Req) => unknown;
  readonly skip: ((req: Req) => boolean) | undefined;
}

const LOAD_SHEDDER_OPTION_NAMES = optionNames<LoadShedderOptions<unknown>>({
  limiter: true,
  criticality: true,
  skip: true,
});

/** Reads `loadShedder` options; errors name fields under `where` (e.g. `loadShedder.limiter`). */
export function parseLoadShedderOptions<Req>(
  options: unknown,
  where: string,
): LoadShedderConfig<Req> {
  const o = readOptions(options ?? {}, where, LOAD_SHEDDER_OPTION_NAMES);
  const given = o.limiter ?? {};
  if (given === null || typeof given !== 'object') {
    throw configError(`${where}.limiter`, given, 'an adaptiveConcurrency(...) or its options');
  }
  const limiter =
    given instanceof AdaptiveConcurrency
      ? given
      : readAs(
          given as object,
          `${where}.limiter`,
          () => new AdaptiveConcurrency(given as AdaptiveConcurrencyOptions),
        );
  const c = o.criticality;
  let criticality: (req: Req) => unknown;
  if (typeof c === 'function') criticality = c as (req: Req) => unknown;
  else {
    try {
      const fixed = readCriticality(c);
      criticality = () => fixed;
    } catch {
      throw configError(
        `${where}.criticality`,
        c,
        "'critical', 'default', 'sheddable' or a function of the request",
      );
    }
  }
  if (o.skip !== undefined && typeof o.skip !== 'function') {
    throw configError(`${where}.skip`, o.skip, 'a function of the request returning a boolean');
  }
  return { limiter, criticality, skip: o.skip as ((req: Req) => boolean) | undefined };
}

/**
 * Admits `req` under the limit or sheds it: undefined when `skip` let it pass; a promise when
 * the limit has a fleet-wide pool (its store is asked), else the decision at once. A
 * criticality function that throws or answers something else than a class throws (the
 * adapter's error path).
 */
export function shedRequest<Req>(
  config: LoadShedderConfig<Req>,
  req: Req,
): AdaptiveDecision | Promise<AdaptiveDecision> | undefined {
  if (config.skip?.(req) === true) return undefined;
  const criticality = readCriticality(config.criticality(req));
  const limiter = config.limiter;
  return limiter.fleet === undefined
    ? limiter.tryAcquire({ criticality })
    : limiter.acquire({ criticality });
}

/** Problem type URI of a request shed under overload (a `tag:` URI, RFC 4151). */
export const OVERLOADED_TYPE = 'tag:floodgate.dev,2026:problem:overloaded';

/** RFC 9457 body of a 503 sent to a shed request. */
export interface OverloadedProblem {
  readonly type: typeof OVERLOADED_TYPE;
  readonly title: 'Service Overloaded';
  readonly status: 503;
  readonly detail: string;
  /** The class the request was shed as. */
  readonly criticality: Criticality;
}

/** What a shed request is answered: status, headers and the problem body. */
export interface OverloadedAnswer {
  readonly status: 503;
  readonly headers: { readonly 'Retry-After': string; readonly 'Content-Type': string };
  readonly problem: OverloadedProblem;
}

/** The 503 for a shed decision: `Retry-After` in whole seconds (at least 1). */
export function overloadedAnswer(decision: AdaptiveDecision): OverloadedAnswer {
  const seconds = Math.max(1, ceilSeconds(decision.retryAfter));
  const why =
    decision.reason === 'event-loop'
      ? 'the server is too busy'
      : `the server is at its concurrency limit for ${decision.criticality} requests`;
  return {
    status: 503,
    headers: { 'Retry-After': String(seconds), 'Content-Type': PROBLEM_CONTENT_TYPE },
    problem: {
      type: OVERLOADED_TYPE,
      title: 'Service Overloaded',
      status: 503,
      detail: `The request was shed because ${why}; retry in ${seconds} s.`,
      criticality: decision.criticality,
    },
  };
}

/**
 * Releases `lease` when `response` finishes: the latency fed to the limit runs from admission to
 * that moment. A response that closes first (the client went away, an error) frees the slot
 * without teaching the limit anything: the time until the client gave up is not the service's
 * latency (a request admitted after its client had already gone would teach ~0 ms, and a run of
 * them once pulled Gradient2's long-term RTT from 46 ms to 1 ms). A response already closed
 * releases at once, the same way.
 */
export function releaseWhenFinished(response: ServerResponse, lease: AdaptiveLease): void {
  if (response.closed || response.destroyed) {
    lease.release({ ignore: !response.writableFinished });
    return;
  }
  const release = () => {
    response.off('finish', release);
    response.off('close', release);
    lease.release({ ignore: !response.writableFinished });
  };
  response.once('finish', release);
  response.once('close', release);
}
