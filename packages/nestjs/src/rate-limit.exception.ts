/**
 * The 429 the guard throws. It is an HttpException, so exception filters see it and can read
 * `decision`; Nest's default filter sends `getResponse()`, the RFC 9457 problem object the
 * Express and Koa adapters send.
 */
import { type Decision } from '@floodgate/core';
import { quotaExceededProblem } from '@floodgate/core/http';
import { HttpException, HttpStatus } from '@nestjs/common';

export class RateLimitException extends HttpException {
  /** The denying decision: which policy decided, `retryAfter`, every policy's view. */
  readonly decision: Decision;

  constructor(decision: Decision, body: string | object = quotaExceededProblem(decision)) {
    super(body, HttpStatus.TOO_MANY_REQUESTS, { description: 'Too Many Requests' });
    this.decision = decision;
  }
}
