/** Load balancers poll this: no token, never rate limited. */
import { SkipRateLimit } from '@floodgate/nestjs';
import { Controller, Get } from '@nestjs/common';
import { Public } from './auth.guard.js';

@Controller('health')
@Public()
@SkipRateLimit()
export class HealthController {
  @Get()
  health() {
    return { status: 'ok' };
  }
}
