/**
 * `ban` through RateLimitModule: 429 until the `after`-th denial, then 403 (Nest's error shape
 * by default, the RFC 9457 `banned` problem with RateLimitExceptionFilter). Express and Fastify.
 */
import 'reflect-metadata';
import { memoryStore } from '@floodgate/core';
import { BANNED_TYPE } from '@floodgate/core/http';
import { RateLimit, RateLimitExceptionFilter, RateLimitModule } from '@floodgate/nestjs';
import { Controller, Get } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import request from 'supertest';
import { clock, closeApps, PLATFORMS } from './app.js';

@Controller('login')
class LoginController {
  @Get()
  @RateLimit({ limit: 1, window: '1m', name: 'login' })
  login() {
    return { ok: true };
  }
}

afterEach(closeApps);

describe.each(PLATFORMS)('$name platform: ban', (platform) => {
  const boot = (filter: boolean) =>
    platform.boot({
      imports: [
        RateLimitModule.forRoot({
          store: memoryStore({ clock }),
          global: true,
          ban: { after: 2, window: '1m', duration: '15m' },
        }),
      ],
      controllers: [LoginController],
      providers: filter ? [{ provide: APP_FILTER, useClass: RateLimitExceptionFilter }] : [],
    });

  it('answers 403 once banned (Nest error shape)', async () => {
    const app = await boot(false);
    const server = app.getHttpServer();
    expect((await request(server).get('/login')).status).toBe(200);
    expect((await request(server).get('/login')).status).toBe(429);
    const banned = await request(server).get('/login');
    expect(banned.status).toBe(403);
    expect(banned.body).toMatchObject({ statusCode: 403, error: 'Forbidden', blocked: true });
    expect(banned.headers['retry-after']).toBe('900');
  });

  it('answers the banned problem with RateLimitExceptionFilter', async () => {
    const app = await boot(true);
    const server = app.getHttpServer();
    await request(server).get('/login');
    await request(server).get('/login');
    const banned = await request(server).get('/login');
    expect(banned.status).toBe(403);
    expect(JSON.parse(banned.text)).toMatchObject({ type: BANNED_TYPE, status: 403 });
  });
});
