/**
 * Optional: sends RateLimitException as `application/problem+json`, byte for byte what the
 * Express and Koa adapters send. Without it Nest's default filter sends the same body as
 * `application/json` (it resets any other Content-Type on an error body).
 */
import { PROBLEM_CONTENT_TYPE } from '@floodgate/core/http';
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
    httpAdapter.setHeader(response, 'Content-Type', PROBLEM_CONTENT_TYPE);
    // A string body keeps the Content-Type above on both platforms.
    httpAdapter.reply(response, JSON.stringify(exception.getResponse()), exception.getStatus());
  }
}
