/**
 * `count` refunds against windows that moved on, on Express and Fastify over the memory store
 * and the harness Redis: a success held across the end of the fixed window, sliding-window
 * bucket or sliding-log entry it was charged to is not refunded, as in the Express, Koa and
 * Fastify adapters (the refund would go to a later window that never held it: holding slow
 * successes across the edge, a client would get extra failed logins).
 */
import 'reflect-metadata';
import { fixedWindow, type Store, slidingLog, slidingWindow } from '@floodgate/core';
import { RateLimit, RateLimitModule } from '@floodgate/nestjs';
import { Controller, Headers, Post, UnauthorizedException } from '@nestjs/common';
import request from 'supertest';
import { CASES, closeApps } from './app.js';

/** Holds a request sent with `x-hold: 1` until `release` is called. */
const hold = { arrived: (): void => {}, release: (): void => {} };

async function answer(result: string | undefined) {
  if (result === 'fail') throw new UnauthorizedException('wrong password');
  if (result === 'hold') {
    await new Promise<void>((resolve) => {
      hold.release = resolve;
      hold.arrived();
    });
  }
  return { ok: true };
}

@Controller('edge')
class EdgeController {
  @Post('fixed')
  @RateLimit({ policies: fixedWindow({ limit: 2, window: '1m', name: 'fixed' }), count: 'failed' })
  fixed(@Headers('x-result') result?: string) {
    return answer(result);
  }

  @Post('sliding')
  @RateLimit({
    policies: slidingWindow({ limit: 2, window: '1m', buckets: 6, name: 'sliding' }),
    count: 'failed',
  })
  sliding(@Headers('x-result') result?: string) {
    return answer(result);
  }

  @Post('log')
  @RateLimit({ policies: slidingLog({ limit: 2, window: '10s', name: 'log' }), count: 'failed' })
  log(@Headers('x-result') result?: string) {
    return answer(result);
  }
}

describe.each(CASES)(
  'refunds across a window edge on $platform.name with the $store.name store',
  ({ platform, store }) => {
    let now = 0;
    let s: Store;
    beforeEach(async () => {
      now = Date.UTC(2030, 0, 1, 12, 0, 55); // 5 s before a minute (and a 10 s bucket) ends
      s = await store.make(() => now);
    });
    afterEach(closeApps);
    afterAll(() => store.close());

    /**
     * Holds a success charged now, moves the clock by `during` ms and sends a failure
     * (admitted), ends the success, moves the clock by `after` ms, and answers the statuses of
     * two more failures. Every route admits 2.
     */
    async function heldAcross(path: string, during: number, after: number) {
      const app = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s, global: true })],
        controllers: [EdgeController],
      });
      const server = app.getHttpServer();
      const fail = () =>
        request(server)
          .post(path)
          .set('x-result', 'fail')
          .then((res) => res.status);
      const arrived = new Promise<void>((resolve) => {
        hold.arrived = resolve;
      });
      const held = request(server)
        .post(path)
        .set('x-result', 'hold')
        .then((res) => res.status);
      await arrived;
      now += during;
      expect(await fail()).toBe(401);
      hold.release();
      expect(await held).toBe(201);
      now += after;
      return [await fail(), await fail()];
    }

    it('a refund whose fixed window has ended is dropped', async () => {
      // The success's refund would come out of the next window, which holds a failure.
      expect(await heldAcross('/edge/fixed', 10_000, 0)).toEqual([401, 429]);
    });

    it('a refund whose sliding-window bucket has ended is dropped', async () => {
      // Charged in bucket b, failure in b + 1; a refund then would come out of b + 1, and once
      // b slides out the window would hold one failure fewer than it admitted.
      expect(await heldAcross('/edge/sliding', 10_000, 50_000)).toEqual([401, 429]);
    });

    it('a refund within its bucket is still made', async () => {
      // The success was given back: the failures alone fill the window.
      expect(await heldAcross('/edge/sliding', 1_000, 0)).toEqual([401, 429]);
    });

    it("a refund after its sliding-log entry left the log is dropped (it would take a failure's)", async () => {
      expect(await heldAcross('/edge/log', 11_000, 0)).toEqual([401, 429]);
    });
  },
);
