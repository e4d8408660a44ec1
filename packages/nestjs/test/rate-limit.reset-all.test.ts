/**
 * `RateLimitService.resetAll()`: every key of every limiter the module holds is forgotten (route
 * policies, module policies, blocks), and nothing of a limiter outside the module; real
 * applications on Express and Fastify, over the memory store and the harness Redis.
 */
import 'reflect-metadata';
import { fixedWindow, RateLimiter, type Store } from '@floodgate/core';
import { RateLimit, RateLimitModule, RateLimitService } from '@floodgate/nestjs';
import { Controller, Get } from '@nestjs/common';
import request from 'supertest';
import { CASES, closeApps } from './app.js';

@Controller('reports')
class ReportsController {
  @Get()
  @RateLimit({ limit: 1, window: '1m', name: 'reports' })
  list() {
    return [];
  }

  @Get('export')
  @RateLimit({ limit: 2, window: '1h', name: 'exports' })
  exportAll() {
    return { ok: true };
  }
}

describe.each(CASES)(
  'RateLimitService.resetAll ($platform.name, $store.name)',
  ({ platform, store }) => {
    let s: Store;
    beforeEach(async () => {
      s = await store.make();
    });
    afterEach(closeApps);
    afterAll(() => store.close());

    it('forgets every key of every route and of the module, blocks included, and nothing outside it', async () => {
      const app = await platform.boot({
        imports: [
          RateLimitModule.forRoot({
            store: s,
            policies: fixedWindow({ limit: 3, window: '1m', name: 'api' }),
            global: true,
          }),
        ],
        controllers: [ReportsController],
      });
      const server = app.getHttpServer();
      const service = app.get(RateLimitService);
      // A limiter of the application's own on the same store: not the module's to forget.
      const other = new RateLimiter({
        store: s,
        prefix: 'other',
        policies: fixedWindow({ limit: 1, window: '1m' }),
      });
      await other.consume('someone');

      await request(server).get('/reports').expect(200);
      await request(server).get('/reports').expect(429);
      await request(server).get('/reports/export').expect(200);
      await request(server).get('/reports/export').expect(200);
      // Both 'exports' (2) and the module's 'api' budget (3) are spent by now.
      await request(server).get('/reports/export').expect(429);
      const blocked = service.limiter([fixedWindow({ limit: 9, window: '1m', name: 'admin' })]);
      await blocked.block('x', '1h');

      expect(await service.resetAll()).toBeGreaterThan(0);

      await request(server).get('/reports').expect(200);
      await request(server).get('/reports/export').expect(200);
      expect(await blocked.consume('x')).toMatchObject({ allowed: true });
      expect(await other.peek('someone')).toMatchObject({ allowed: false });
      // Nothing left to forget but what the requests above wrote again.
      await service.resetAll();
      expect(await service.resetAll()).toBe(0);
    });
  },
);
