/**
 * LoadShedderGuard: overload protection for Nest HTTP routes (Express or Fastify platform),
 * thin over @floodgate/core/http. Each request takes a slot of an adaptive concurrency limit,
 * released when the response finishes (or the connection closes); a shed request gets a 503
 * with `Retry-After` and the RFC 9457 problem as its body. Other transports pass untouched.
 */
import type { ServerResponse } from 'node:http';
import type { AdaptiveConcurrency, AdaptiveDecision } from '@floodgate/core';
import {
  type LoadShedderOptions as HttpLoadShedderOptions,
  type LoadShedderConfig,
  type OverloadedProblem,
  overloadedAnswer,
  parseLoadShedderOptions,
  releaseWhenFinished,
  shedRequest,
} from '@floodgate/core/http';
import { type CanActivate, type ExecutionContext, HttpException, HttpStatus } from '@nestjs/common';

/** `limiter`, `criticality` (a class or `(request) => class`) and `skip`; functions get the platform's request. */
export type LoadShedderOptions = HttpLoadShedderOptions<unknown>;

/** The 503 a shed request gets: the problem body, and the decision for exception filters. */
export class ServiceOverloadedException extends HttpException {
  constructor(
    readonly decision: AdaptiveDecision,
    readonly problem: OverloadedProblem,
  ) {
    super(problem, HttpStatus.SERVICE_UNAVAILABLE, { description: problem.title });
  }
}

/** Express's `res` and Fastify's `reply` both set a header with `header(name, value)`. */
interface PlatformResponse {
  header(name: string, value: string): unknown;
  raw?: ServerResponse;
}

/** Sheds HTTP requests under overload; build it with `loadShedder(...)`. */
export class LoadShedderGuard implements CanActivate {
  private readonly config: LoadShedderConfig<unknown>;

  constructor(options: LoadShedderOptions = {}) {
    this.config = parseLoadShedderOptions<unknown>(options, 'loadShedder');
  }

  /** The adaptive limit requests are admitted under (`limit`, `inFlight`). */
  get limiter(): AdaptiveConcurrency {
    return this.config.limiter;
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const pending = shedRequest(this.config, http.getRequest());
    if (pending === undefined) return true;
    const response = http.getResponse<PlatformResponse>();
    const answer = (decision: AdaptiveDecision): boolean => {
      if (decision.lease === undefined) {
        const shed = overloadedAnswer(decision);
        // Nest's exception filter replies with this body; Express's res.json and Fastify's send
        // both keep a Content-Type that is already set.
        for (const [name, value] of Object.entries(shed.headers)) response.header(name, value);
        throw new ServiceOverloadedException(decision, shed.problem);
      }
      releaseWhenFinished(response.raw ?? (response as unknown as ServerResponse), decision.lease);
      return true;
    };
    return pending instanceof Promise ? pending.then(answer) : answer(pending);
  }
}

/**
 * A guard that sheds requests when the service is overloaded (503, `Retry-After`, RFC 9457
 * problem). Use it globally, first among the guards, so shed requests cost nothing more.
 *
 * @example
 * ```ts
 * app.useGlobalGuards(loadShedder({ criticality: (req: { url: string }) => (req.url === '/pay' ? 'critical' : 'default') }));
 * ```
 */
export function loadShedder(options: LoadShedderOptions = {}): LoadShedderGuard {
  return new LoadShedderGuard(options);
}
