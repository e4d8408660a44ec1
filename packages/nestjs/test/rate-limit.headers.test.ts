/**
 * The `headers` switches through RateLimitModule (custom legacy names, admitted / denied
 * responses apart) and a guard that runs after a middleware already sent the headers: no
 * headers, still counted, refused without an error reaching the exception filter. Express and
 * Fastify platforms over the memory store.
 */
import 'reflect-metadata';
import { memoryStore } from '@floodgate/core';
import { RateLimit, RateLimitExceptionFilter, RateLimitModule } from '@floodgate/nestjs';
import { Controller, Get, type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import request from 'supertest';
import { clock, closeApps, PLATFORMS } from './app.js';

/** Handler runs, for the test whose responses cannot carry a body of the handler's own. */
let handled = 0;

@Controller('items')
class ItemsController {
  @Get()
  @RateLimit({ limit: 1, window: '1m', name: 'items' })
  list() {
    handled++;
    return { ok: true };
  }
}

/** Writes the response's head before the guards run (a middleware that streams early). */
function earlyHead(
  _req: unknown,
  res: { writeHead(status: number): void; write(chunk: string): void },
  next: () => void,
) {
  res.writeHead(200);
  res.write('early;');
  next();
}

afterEach(closeApps);

describe.each(PLATFORMS)('$name platform', (platform) => {
  const boot = (headers: object) =>
    platform.boot({
      imports: [RateLimitModule.forRoot({ store: memoryStore({ clock }), global: true, headers })],
      controllers: [ItemsController],
      providers: [{ provide: APP_FILTER, useClass: RateLimitExceptionFilter }],
    });

  it('custom legacy names; admitted: false sends headers only with the 429', async () => {
    const app = await boot({
      standard: false,
      legacy: { remaining: 'Rate-Limit-Remaining' },
      admitted: false,
    });
    const admitted = await request(app.getHttpServer()).get('/items');
    expect(admitted.status).toBe(200);
    expect(admitted.headers['rate-limit-remaining']).toBeUndefined();
    expect(admitted.headers['x-ratelimit-limit']).toBeUndefined();
    const denied = await request(app.getHttpServer()).get('/items');
    expect(denied.status).toBe(429);
    expect(denied.headers['rate-limit-remaining']).toBe('0');
    expect(denied.headers['x-ratelimit-limit']).toBe('1');
    expect(denied.headers['x-ratelimit-remaining']).toBeUndefined();
    expect(denied.headers['retry-after']).toBe('50');
  });

  it('denied: false answers a bare 429', async () => {
    const app = await boot({ denied: false });
    const admitted = await request(app.getHttpServer()).get('/items');
    expect(admitted.headers.ratelimit).toBe('"items";r=0;t=50');
    const denied = await request(app.getHttpServer()).get('/items');
    expect(denied.status).toBe(429);
    expect(denied.headers.ratelimit).toBeUndefined();
    expect(denied.headers['retry-after']).toBeUndefined();
  });

  it('headers already sent by a middleware: skipped, still counted, no error', async () => {
    @Module({
      imports: [RateLimitModule.forRoot({ store: memoryStore({ clock }), global: true })],
      controllers: [ItemsController],
      providers: [{ provide: APP_FILTER, useClass: RateLimitExceptionFilter }],
    })
    class EarlyModule implements NestModule {
      configure(consumer: MiddlewareConsumer) {
        consumer.apply(earlyHead).forRoutes('*');
      }
    }
    const app = await platform.boot({ imports: [EarlyModule] });
    handled = 0;
    const first = await request(app.getHttpServer()).get('/items');
    expect(first.status).toBe(200);
    // The handler ran: setting a header on a sent response did not throw out of the guard.
    expect(handled).toBe(1);
    expect(first.headers.ratelimit).toBeUndefined();
    const second = await request(app.getHttpServer()).get('/items');
    expect(second.status).toBe(200);
    // Counted and refused: the handler did not run, and the filter only ended the response.
    expect(second.text).toBe('early;');
    expect(handled).toBe(1);
  });
});
