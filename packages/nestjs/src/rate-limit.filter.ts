/**
 * Optional: sends RateLimitException as an RFC 9457 `application/problem+json` body, byte for
 * byte what the Express and Koa adapters send, instead of Nest's `{ statusCode, message, error }`.
 */
import { deniedProblem, PROBLEM_CONTENT_TYPE } from '@floodgate/core/http';
import { type ArgumentsHost, Catch, type ExceptionFilter, Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { RateLimitException } from './rate-limit.exception.js';

@Catch(RateLimitException)
@Injectable()
export class RateLimitExceptionFilter implements ExceptionFilter<RateLimitException> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: RateLimitException, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response = host.switchToHttp().getResponse();
    // Headers already out (a middleware streamed early): no 429 can be sent, so the response
    // ends as it is, as Nest's own exception filter does.
    if (httpAdapter.isHeadersSent(response)) {
      httpAdapter.end(response);
      return;
    }
    httpAdapter.setHeader(response, 'Content-Type', PROBLEM_CONTENT_TYPE);
    // A string body keeps the Content-Type above on both platforms.
    httpAdapter.reply(
      response,
      JSON.stringify(deniedProblem(exception.decision)),
      exception.getStatus(),
    );
  }
}
