/**
 * `@RateLimit({ cost: { estimate, actual } })` on Express and Fastify over the memory store and
 * the harness Redis: the estimate is charged by the guard, the request settled at its actual
 * cost once the response has finished (refund below, debt above; a response header works as
 * `actual`). The options' errors: rate-limit.config.test.ts.
 */
import 'reflect-metadata';
import { tokenBucket } from '@floodgate/core';
import { RateLimit } from '@floodgate/nestjs';
import { Controller, type ExecutionContext, Get, Header } from '@nestjs/common';
import request from 'supertest';
import { CASES, closeApps, globalModuleBoot } from './app.js';

/** `x-used` of the request: what the work "really" cost. */
const used = (context: ExecutionContext) =>
  Number(
    context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-used'],
  );

@Controller('llm')
class LlmController {
  @Get('complete')
  @RateLimit({
    policies: tokenBucket({ limit: 10, window: '1h', name: 'tokens' }),
    cost: { estimate: 5, actual: used },
  })
  complete() {
    return { ok: true };
  }

  @Get('header')
  @Header('x-tokens-used', '9')
  @RateLimit({
    policies: tokenBucket({ limit: 10, window: '1h', name: 'header' }),
    cost: { estimate: 2, actual: 'x-tokens-used' },
  })
  header() {
    return { ok: true };
  }
}

/** Lets the settlement that follows a finished response reach the store (no timing asserted). */
const settled = () => new Promise((resolve) => setTimeout(resolve, 100));

describe.each(CASES)(
  'cost.actual on $platform.name with the $store.name store',
  ({ platform, store }) => {
    afterEach(closeApps);
    afterAll(() => store.close());

    it('charges the estimate, refunds below it, charges an overrun into debt', async () => {
      const s = await store.make();
      const app = await globalModuleBoot(platform, () => s)([LlmController]);
      const server = app.getHttpServer();
      const get = (n: number) => request(server).get('/llm/complete').set('x-used', String(n));
      const first = await get(2);
      expect(first.status).toBe(200);
      expect(first.headers.ratelimit).toBe('"tokens";r=5;t=1800');
      await settled();
      // 8 left after the settle; this one takes its estimate: 3 left.
      expect((await get(20)).headers.ratelimit).toBe('"tokens";r=3;t=2520');
      await settled();
      // 8 − 20 = −12: denied until 17 tokens (12 of debt, the 5 of the estimate) are back.
      const denied = await get(0);
      expect(denied.status).toBe(429);
      expect(denied.headers.ratelimit).toBe('"tokens";r=0;t=6120');
    });

    it('reads the actual cost from a response header', async () => {
      const s = await store.make();
      const app = await globalModuleBoot(platform, () => s)([LlmController]);
      const server = app.getHttpServer();
      expect((await request(server).get('/llm/header')).headers.ratelimit).toBe(
        '"header";r=8;t=720',
      );
      await settled();
      // Settled at 9: 1 left, so this one's estimate of 2 cannot be met.
      expect((await request(server).get('/llm/header')).status).toBe(429);
    });
  },
);
