/**
 * The 429 the guard throws on HTTP (503 when `onStoreError: 'closed'` refused because the store
 * could not decide). It is an HttpException, so exception filters see it and can read
 * `decision`; Nest's default filter sends `getResponse()`: Nest's own error shape
 * `{ statusCode, message, error }` (what @nestjs/throttler clients read) plus the decision's
 * fields. RateLimitExceptionFilter sends the RFC 9457 problem instead.
 */
import type { Decision } from '@floodgate/core';
import { storeDecided } from '@floodgate/core/http';
import {
  type ExecutionContext,
  ForbiddenException,
  HttpException,
  HttpStatus,
} from '@nestjs/common';
import { transportOf } from './rate-limit.context.js';

/**
 * The 429 (503, or 403 for a ban) body: Nest's error shape plus the decision (times in
 * milliseconds).
 */
export interface RateLimitBody {
  readonly statusCode: 429 | 503 | 403;
  readonly message: string;
  readonly error: 'Too Many Requests' | 'Service Unavailable' | 'Forbidden';
  /** The policy that decided. */
  readonly policy: string;
  readonly limit: number;
  readonly remaining: number;
  /** Milliseconds until the request would be admitted; −1 when it never can be. */
  readonly retryAfter: number;
  /** Milliseconds until the key is back to full capacity. */
  readonly resetAfter: number;
  /**
   * Present (true) when the key is blocked (a policy's `blockDuration` lockout, or `block()`),
   * as in the problem body: `retryAfter` is the block's remaining time (−1: until unblocked).
   */
  readonly blocked?: true;
}

/**
 * The body of a denial with `message`: 429 when the policies denied, 503 when the store could
 * not decide and `onStoreError: 'closed'` refused, 403 when the limiter's `ban` banned the key.
 */
export function rateLimitBody(decision: Decision, message: string): RateLimitBody {
  const decided = storeDecided(decision);
  const banned = decision.reason === 'banned';
  return {
    statusCode: banned
      ? HttpStatus.FORBIDDEN
      : decided
        ? HttpStatus.TOO_MANY_REQUESTS
        : HttpStatus.SERVICE_UNAVAILABLE,
    message,
    error: banned ? 'Forbidden' : decided ? 'Too Many Requests' : 'Service Unavailable',
    policy: decision.policy,
    limit: decision.limit,
    remaining: decision.remaining,
    retryAfter: decision.retryAfter,
    resetAfter: decision.resetAfter,
    ...(decision.reason === 'blocked' || banned ? { blocked: true as const } : {}),
  };
}

/** The `message` of a denial without `errorMessage`. */
function defaultMessage(decision: Decision): RateLimitBody['error'] {
  if (decision.reason === 'banned') return 'Forbidden';
  return storeDecided(decision) ? 'Too Many Requests' : 'Service Unavailable';
}

export class RateLimitException extends HttpException {
  /** The denying decision: which policy decided, `retryAfter`, every policy's view. */
  readonly decision: Decision;

  constructor(decision: Decision, body?: string | object) {
    const fields = rateLimitBody(decision, defaultMessage(decision));
    super(body ?? fields, fields.statusCode, { description: fields.error });
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

/** `extensions.code` of GraphQL refusals, `code` of WebSocket ones (a `deny` list, a bad app key). */
export const FORBIDDEN = 'FORBIDDEN';

/** A GraphQL refusal: `extensions` carry the problem body (`code` `FORBIDDEN`). */
export class RateLimitForbiddenGraphQLError extends Error {
  override readonly name = 'RateLimitForbiddenGraphQLError';
  readonly extensions: Record<string, unknown>;

  constructor(problem: { readonly detail?: string } & object) {
    super(problem.detail ?? 'Forbidden');
    this.extensions = { code: FORBIDDEN, statusCode: 403, ...problem };
  }
}

/**
 * The 403 for a request refused before any store call (on a `deny` list, or an app key
 * `verifyAppKey` rejected), as its transport expects: a ForbiddenException with `problem` as
 * its body (HTTP), a GraphQL error, a `WsException`.
 */
export async function forbidden(context: ExecutionContext, problem: object): Promise<Error> {
  const transport = transportOf(context);
  if (transport === 'graphql') return new RateLimitForbiddenGraphQLError(problem);
  if (transport === 'ws') {
    const { WsException } = await import('@nestjs/websockets');
    // Nest's WebSocket errors say `status: 'error'`; the HTTP status is `statusCode`.
    return new WsException({ ...problem, status: 'error', statusCode: 403, code: FORBIDDEN });
  }
  return new ForbiddenException(problem);
}
