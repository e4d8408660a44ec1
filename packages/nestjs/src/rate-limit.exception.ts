/**
<<<<<<< HEAD
 * The 429 the guard throws on HTTP. It is an HttpException, so exception filters see it and
 * can read `decision`; Nest's default filter sends `getResponse()`: Nest's own error shape
 * `{ statusCode, message, error }` (what @nestjs/throttler clients read) plus the decision's
 * fields. RateLimitExceptionFilter sends the RFC 9457 problem instead.
 */
import { type Decision } from '@floodgate/core';
=======
 * The 429 the guard throws (503 when `onStoreError: 'closed'` refused because the store could
 * not decide). It is an HttpException, so exception filters see it and can read
 * `decision`; Nest's default filter sends `getResponse()`, the RFC 9457 problem object the
 * Express and Koa adapters send.
 */
import type { Decision } from '@floodgate/core';
import { deniedProblem, storeDecided } from '@floodgate/core/http';
>>>>>>> main
import { HttpException, HttpStatus } from '@nestjs/common';

/** The 429 body: Nest's error shape plus the decision (times in milliseconds). */
export interface RateLimitBody {
  readonly statusCode: 429;
  readonly message: string;
  readonly error: 'Too Many Requests';
  /** The policy that decided. */
  readonly policy: string;
  readonly limit: number;
  readonly remaining: number;
  /** Milliseconds until the request would be admitted; −1 when it never can be. */
  readonly retryAfter: number;
  /** Milliseconds until the key is back to full capacity. */
  readonly resetAfter: number;
}

/** The body of a denial with `message`. */
export function rateLimitBody(decision: Decision, message: string): RateLimitBody {
  return {
    statusCode: HttpStatus.TOO_MANY_REQUESTS,
    message,
    error: 'Too Many Requests',
    policy: decision.policy,
    limit: decision.limit,
    remaining: decision.remaining,
    retryAfter: decision.retryAfter,
    resetAfter: decision.resetAfter,
  };
}

export class RateLimitException extends HttpException {
  /** The denying decision: which policy decided, `retryAfter`, every policy's view. */
  readonly decision: Decision;

<<<<<<< HEAD
  constructor(
    decision: Decision,
    body: string | object = rateLimitBody(decision, 'Too Many Requests'),
  ) {
    super(body, HttpStatus.TOO_MANY_REQUESTS, { description: 'Too Many Requests' });
=======
  constructor(decision: Decision, body: string | object = deniedProblem(decision)) {
    if (storeDecided(decision)) {
      super(body, HttpStatus.TOO_MANY_REQUESTS, { description: 'Too Many Requests' });
    } else {
      super(body, HttpStatus.SERVICE_UNAVAILABLE, { description: 'Service Unavailable' });
    }
>>>>>>> main
    this.decision = decision;
  }
}

/** `extensions.code` of GraphQL denials, `code` of WebSocket denials. */
export const TOO_MANY_REQUESTS = 'TOO_MANY_REQUESTS';

/**
 * A GraphQL denial. graphql-js copies `extensions` of an error thrown in a resolver into the
 * response's error (Apollo and Mercurius alike), so no `graphql` import is needed here.
 */
export class RateLimitGraphQLError extends Error {
  override readonly name = 'RateLimitGraphQLError';
  /** `code` `TOO_MANY_REQUESTS`, `retryAfter` (ms), `policy`, `limit`, `remaining`, `resetAfter`. */
  readonly extensions: Record<string, unknown>;

  constructor(
    message: string,
    readonly decision: Decision,
  ) {
    super(message);
    const { statusCode, message: _m, error: _e, ...fields } = rateLimitBody(decision, message);
    this.extensions = { code: TOO_MANY_REQUESTS, statusCode, ...fields };
  }
}
