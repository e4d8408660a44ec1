/**
 * Live limits through RateLimitService: setLimit / getLimit / clearLimit on the key a request
 * resolves to (here on another handler's limits, as an admin route would), seen by the very next
 * request, on every platform and store.
 */
import 'reflect-metadata';
import type { Store } from '@floodgate/core';
import { RateLimit, RateLimitModule, RateLimitService } from '@floodgate/nestjs';
import { Controller, Get, Headers, Post, Req } from '@nestjs/common';
import request from 'supertest';
import { CASES, closeApps } from './app.js';

const customer = (c: { switchToHttp(): { getRequest(): { headers: Record<string, unknown> } } }) =>
  String(c.switchToHttp().getRequest().headers['x-customer']);

@Controller('plan')
class PlanController {
  constructor(private readonly rateLimit: RateLimitService) {}

  @Get()
  @RateLimit({ limit: 2, window: '1h', name: 'per-hour', key: customer })
  get() {
    return { ok: true };
  }

  /** An admin call: the customer's plan goes to `x-limit` per hour, used requests kept. */
  @Post('upgrade')
  async upgrade(@Req() req: object, @Headers('x-limit') limit: string) {
    await this.rateLimit.setLimit(
      req,
      { policy: 'per-hour', limit: Number(limit) },
      { carry: 'additive', handler: [PlanController, 'get'] },
    );
    return this.rateLimit.getLimit(req, { handler: [PlanController, 'get'] });
  }

  /** An emergency: every customer goes to `x-limit` per hour for `x-ttl`, used requests kept. */
  @Post('tighten')
  async tighten(@Req() req: object, @Headers('x-limit') limit: string) {
    const options = { handler: [PlanController, 'get'], key: '*' } as const;
    await this.rateLimit.setLimit(
      req,
      { policy: 'per-hour', limit: Number(limit) },
      { ...options, carry: 'additive', ttl: '1h' },
    );
    return this.rateLimit.getLimit(req, options);
  }

  @Post('relax')
  async relax(@Req() req: object) {
    const options = { handler: [PlanController, 'get'], key: '*' } as const;
    await this.rateLimit.clearLimit(req, { ...options, carry: 'additive' });
    return this.rateLimit.getLimit(req, options);
  }

  @Post('downgrade')
  async downgrade(@Req() req: object) {
    await this.rateLimit.clearLimit(req, { carry: 'additive', handler: [PlanController, 'get'] });
    return this.rateLimit.getLimit(req, { handler: [PlanController, 'get'] });
  }
}

describe.each(CASES)(
  'RateLimitService live limits on $platform.name with the $store.name store',
  ({ platform, store }) => {
    let s: Store;
    beforeEach(async () => {
      s = await store.make();
    });
    afterEach(closeApps);
    afterAll(() => store.close());

    it('setLimit raises one customer at once, getLimit shows it, clearLimit goes back', async () => {
      const app = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s, global: true, liveLimits: true })],
        controllers: [PlanController],
      });
      const server = app.getHttpServer();
      const get = (who: string) => request(server).get('/plan').set('x-customer', who);
      await get('acme').expect(200);
      await get('acme').expect(200);
      await get('acme').expect(429);
      const upgraded = await request(server)
        .post('/plan/upgrade')
        .set('x-customer', 'acme')
        .set('x-limit', '5')
        .expect(201);
      expect(upgraded.body['per-hour']).toMatchObject({ limit: 5, overridden: true });
      // 2 used of 5: three more now, the next refused; another customer keeps the plan's 2.
      for (let i = 0; i < 3; i++) await get('acme').expect(200);
      await get('acme').expect(429);
      await get('other').expect(200);
      await get('other').expect(200);
      await get('other').expect(429);
      const cleared = await request(server)
        .post('/plan/downgrade')
        .set('x-customer', 'acme')
        .expect(201);
      expect(cleared.body['per-hour']).toMatchObject({ limit: 2, overridden: false });
      await get('acme').expect(429);
    });

    it("key '*' changes every customer's limit, a customer's own override still beats it", async () => {
      const app = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s, global: true, liveLimits: true })],
        controllers: [PlanController],
      });
      const server = app.getHttpServer();
      const get = (who: string) => request(server).get('/plan').set('x-customer', who);
      await get('a').expect(200);
      await request(server).post('/plan/upgrade').set('x-customer', 'vip').set('x-limit', '4');
      const tightened = await request(server)
        .post('/plan/tighten')
        .set('x-customer', 'admin')
        .set('x-limit', '1')
        .expect(201);
      expect(tightened.body['per-hour']).toMatchObject({ limit: 1, overridden: true });
      await get('a').expect(429);
      await get('b').expect(200);
      await get('b').expect(429);
      for (let i = 0; i < 4; i++) await get('vip').expect(200);
      const relaxed = await request(server)
        .post('/plan/relax')
        .set('x-customer', 'admin')
        .expect(201);
      expect(relaxed.body['per-hour']).toMatchObject({ limit: 2, overridden: false });
      await get('a').expect(200);
      await get('a').expect(429);
    });

    it('without liveLimits, setLimit fails naming the option', async () => {
      const app = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s, global: true })],
        controllers: [PlanController],
      });
      await request(app.getHttpServer())
        .post('/plan/upgrade')
        .set('x-customer', 'acme')
        .set('x-limit', '5')
        .expect(500);
    });
  },
);
