/**
 * RateLimitInterceptor: the guard's limits, run as an interceptor, so after every guard
 * (global, class and handler): an auth guard has set `request.user` whatever its place, and
 * `'clientId'` keys work without ordering guards. Registered globally by
 * `RateLimitModule.forRoot({ global: true, mode: 'interceptor' })`, or per class or handler with
 * `@UseInterceptors(RateLimitInterceptor)`. A request a guard rejects is never counted.
 */
import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { RateLimitGuard } from './rate-limit.guard.js';

@Injectable()
export class RateLimitInterceptor extends RateLimitGuard implements NestInterceptor {
  protected override readonly afterGuards: boolean = true;

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    await this.canActivate(context);
    return next.handle();
  }
}
