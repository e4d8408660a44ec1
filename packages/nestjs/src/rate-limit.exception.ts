/**
 * The 429 the guard throws (503 when `onStoreError: 'closed'` refused because the store could
 * not decide). It is an HttpException, so exception filters see it and can read
 * `decision`; Nest's default filter sends `getResponse()`, the RFC 9457 problem object the
 * Express and Koa adapters send.
 */
import type { Decision } from '@floodgate/core';
import { deniedProblem, storeDecided } from '@floodgate/core/http';
import { HttpException, HttpStatus } from '@nestjs/common';

export class RateLimitException extends HttpException {
  /** The denying decision: which policy decided, `retryAfter`, every policy's view. */
  readonly decision: Decision;

  constructor(decision: Decision, body: string | object = deniedProblem(decision)) {
    if (storeDecided(decision)) {
      super(body, HttpStatus.TOO_MANY_REQUESTS, { description: 'Too Many Requests' });
    } else {
      super(body, HttpStatus.SERVICE_UNAVAILABLE, { description: 'Service Unavailable' });
    }
    this.decision = decision;
  }
}
