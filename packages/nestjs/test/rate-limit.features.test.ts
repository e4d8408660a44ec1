/**
 * Scopes, module policies beside route policies, named skips, guard order (interceptor mode),
 * one charge per request whichever guard classes run, and the 429 body Nest clients expect:
 * real applications on Express and Fastify, over the memory store and the harness Redis.
 */
import 'reflect-metadata';
import { type Decision, fixedWindow, type Store } from '@floodgate/core';
import {
  RateLimit,
  RateLimitExceptionFilter,
  RateLimitGuard,
  RateLimitInterceptor,
  RateLimitModule,
  SkipRateLimit,
} from '@floodgate/nestjs';
import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  HttpException,
  Injectable,
  Post,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import request from 'supertest';
import { BearerAuthGuard, CASES, closeApps, redisKeys } from './app.js';

const bearer = (clientId: string) => ({ Authorization: `Bearer ${clientId}` });

/** 100 a minute per client across the whole API (here 3, to stay short). */
const apiWide = fixedWindow({ limit: 3, window: '1m', name: 'api' });

@Controller('orders')
export class OrdersController {
  @Get()
  @RateLimit({ limit: 10, window: '1m', name: 'orders-list' })
  list() {
    return [];
  }

  @Post()
  @RateLimit({ limit: 1, window: '1m', name: 'orders-create' })
  create() {
    return { created: true };
  }

  @Get('plain')
  plain() {
    return { ok: true };
  }

  @Get('own-only')
  @RateLimit({ limit: 10, window: '1m', name: 'own-only', override: true })
  ownOnly() {
    return { ok: true };
  }

  @Get('no-api')
  @SkipRateLimit('api')
  noApi() {
    return { ok: true };
  }

  @Get('health')
  @SkipRateLimit()
  health() {
    return { ok: true };
  }
}

@Controller('scoped')
@RateLimit({ limit: 2, window: '1m', name: 'per-controller', scope: 'controller' })
export class ScopedController {
  @Get('a')
  a() {
    return { ok: true };
  }

  @Get('b')
  b() {
    return { ok: true };
  }
}

@Controller('other')
@RateLimit({ limit: 2, window: '1m', name: 'per-controller', scope: 'controller' })
export class OtherScopedController {
  @Get()
  get() {
    return { ok: true };
  }
}

/** Global scope with a constant key: one budget for everyone, on every route that uses it. */
const everyone = { limit: 2, window: '1m', name: 'everyone', scope: 'global', key: () => 'all' };
@Controller('shared')
export class SharedController {
  @Get('x')
  @RateLimit(everyone as never)
  x() {
    return { ok: true };
  }

  @Get('y')
  @RateLimit(everyone as never)
  y() {
    return { ok: true };
  }
}

describe.each(CASES)(
  '@floodgate/nestjs on $platform.name with the $store.name store',
  ({ platform, store }) => {
    let s: Store;
    beforeEach(async () => {
      s = await store.make();
    });
    afterEach(closeApps);
    afterAll(() => store.close());

    const apiApp = (options: object = {}, providers: unknown[] = []) =>
      platform.boot({
        imports: [
          RateLimitModule.forRoot({
            store: s,
            global: true,
            key: ['clientId', 'ip'],
            policies: apiWide,
            scope: 'global',
            ...options,
          }),
        ],
        controllers: [OrdersController],
        providers: [{ provide: APP_GUARD, useClass: BearerAuthGuard }, ...(providers as never[])],
      });

    describe('module policies with scope global, beside route policies', () => {
      it('share one budget per client across every route', async () => {
        const server = (await apiApp()).getHttpServer();
        await request(server).get('/orders').set(bearer('a')).expect(200);
        await request(server).get('/orders/plain').set(bearer('a')).expect(200);
        await request(server).get('/orders/plain').set(bearer('a')).expect(200);
        await request(server).get('/orders').set(bearer('a')).expect(429);
        await request(server).get('/orders/plain').set(bearer('a')).expect(429);
        await request(server).get('/orders').set(bearer('b')).expect(200);
      });

      it('apply together with the route policy, both in the headers, one store key per policy', async () => {
        const server = (await apiApp()).getHttpServer();
        const ok = await request(server).get('/orders').set(bearer('a')).expect(200);
        expect(ok.headers['ratelimit-policy']).toBe('"api";q=3;w=60, "orders-list";q=10;w=60');
        expect(ok.headers.ratelimit).toBe('"api";r=2;t=50, "orders-list";r=9;t=50');
        if (store.name === 'redis') {
          // One hash tag per client: both policies are charged in one script call.
          const keys = (await redisKeys()).map((k) => k.replace(/:fw[^|]*/, ':<id>'));
          expect(keys).toEqual(['rl:{client:a}:<id>|GET /orders', 'rl:{client:a}:<id>']);
        }
      });

      it('charge all or nothing: a route denial leaves the API budget untouched', async () => {
        const server = (await apiApp()).getHttpServer();
        await request(server).post('/orders').set(bearer('a')).expect(201);
        const denied = await request(server).post('/orders').set(bearer('a')).expect(429);
        expect(denied.body.policy).toBe('orders-create');
        expect(denied.headers.ratelimit).toBe('"api";r=2;t=50, "orders-create";r=0;t=50');
        // The denied POST did not take from "api": two more requests pass.
        await request(server).get('/orders/plain').set(bearer('a')).expect(200);
        await request(server).get('/orders/plain').set(bearer('a')).expect(200);
        await request(server).get('/orders/plain').set(bearer('a')).expect(429);
      });

      it('stay all or nothing when the module and the route key differently', async () => {
        const app = await platform.boot({
          imports: [
            RateLimitModule.forRoot({ store: s, global: true, policies: apiWide, scope: 'global' }),
          ],
          controllers: [KeyedOrdersController],
          providers: [{ provide: APP_GUARD, useClass: BearerAuthGuard }],
        });
        const server = app.getHttpServer();
        await request(server).post('/keyed').set(bearer('a')).expect(201);
        const denied = await request(server).post('/keyed').set(bearer('a')).expect(429);
        expect(denied.body.policy).toBe('keyed-create');
        // "api" (keyed by IP) was read, not charged: its item says what would remain had the
        // request been admitted (a peek), and the next three requests show that it was not.
        expect(denied.headers.ratelimit).toBe('"api";r=1;t=50, "keyed-create";r=0;t=50');
        await request(server).post('/keyed').set(bearer('b')).expect(201);
        await request(server).post('/keyed').set(bearer('c')).expect(201);
        await request(server).post('/keyed').set(bearer('d')).expect(429);
      });

      it('give way to a route policy with override: true', async () => {
        const server = (await apiApp()).getHttpServer();
        for (let i = 0; i < 5; i++) {
          const res = await request(server).get('/orders/own-only').set(bearer('a')).expect(200);
          expect(res.headers['ratelimit-policy']).toBe('"own-only";q=10;w=60');
        }
        await request(server).get('/orders/plain').set(bearer('a')).expect(200);
      });
    });

    describe('skips', () => {
      it("@SkipRateLimit('api') skips that policy only", async () => {
        const server = (await apiApp({ policies: [apiWide] })).getHttpServer();
        for (let i = 0; i < 4; i++) {
          const res = await request(server).get('/orders/no-api').set(bearer('a')).expect(200);
          expect(res.headers.ratelimit).toBeUndefined();
        }
        await request(server).get('/orders/plain').set(bearer('a')).expect(200);
      });

      it('@SkipRateLimit() skips the module policies too', async () => {
        const server = (await apiApp()).getHttpServer();
        for (let i = 0; i < 4; i++) await request(server).get('/orders/health').expect(200);
        await request(server).get('/orders/plain').expect(200);
      });

      it('the module `skip` function exempts requests from every limit', async () => {
        const server = (
          await apiApp({
            skip: (context: ExecutionContext) =>
              context.switchToHttp().getRequest().headers['x-e2e'] === '1',
          })
        ).getHttpServer();
        for (let i = 0; i < 5; i++) {
          await request(server).get('/orders/plain').set(bearer('a')).set('x-e2e', '1').expect(200);
        }
        const res = await request(server).get('/orders/plain').set(bearer('a')).expect(200);
        expect(res.headers.ratelimit).toBe('"api";r=2;t=50');
      });
    });

    describe('scopes', () => {
      it("'controller' shares one budget across a controller's handlers, not with another", async () => {
        const app = await platform.boot({
          imports: [RateLimitModule.forRoot({ store: s, global: true })],
          controllers: [ScopedController, OtherScopedController],
        });
        const server = app.getHttpServer();
        await request(server).get('/scoped/a').expect(200);
        await request(server).get('/scoped/b').expect(200);
        await request(server).get('/scoped/a').expect(429);
        await request(server).get('/other').expect(200);
      });

      it("'global' with a constant key counts one budget for everyone, across routes", async () => {
        const app = await platform.boot(
          {
            imports: [RateLimitModule.forRoot({ store: s, global: true })],
            controllers: [SharedController],
          },
          { trustProxy: true },
        );
        const server = app.getHttpServer();
        await request(server).get('/shared/x').set('X-Forwarded-For', '203.0.113.1').expect(200);
        await request(server).get('/shared/y').set('X-Forwarded-For', '203.0.113.2').expect(200);
        await request(server).get('/shared/x').set('X-Forwarded-For', '203.0.113.3').expect(429);
        if (store.name === 'redis') {
          expect((await redisKeys()).map((k) => k.replace(/:fw\S+$/, ':<id>'))).toEqual([
            'rl:{all}:<id>',
          ]);
        }
      });
    });

    describe('guard order', () => {
      @Controller('profile')
      @UseGuards(BearerAuthGuard)
      @RateLimit({ limit: 2, window: '1m', key: ['clientId', 'ip'] })
      class ProfileController {
        @Get()
        get() {
          return { ok: true };
        }
      }

      it('a global guard before a controller auth guard refuses instead of one shared bucket', async () => {
        const app = await platform.boot({
          imports: [RateLimitModule.forRoot({ store: s, global: true })],
          controllers: [ProfileController],
        });
        const server = app.getHttpServer();
        // Was: alice 200, bob 200, carol 429 on her first request (one bucket for all three).
        await request(server).get('/profile').set(bearer('alice')).expect(500);
        await request(server).get('/profile').set(bearer('bob')).expect(500);
        if (store.name === 'redis') expect(await redisKeys()).toEqual([]);
      });

      it("mode: 'interceptor' runs after every guard and keys by the client id", async () => {
        const app = await platform.boot({
          imports: [RateLimitModule.forRoot({ store: s, global: true, mode: 'interceptor' })],
          controllers: [ProfileController],
        });
        const server = app.getHttpServer();
        for (const who of ['alice', 'bob', 'carol']) {
          const res = await request(server).get('/profile').set(bearer(who)).expect(200);
          expect(res.headers.ratelimit).toBe('"fixed-2-per-60s";r=1;t=50');
        }
        await request(server).get('/profile').set(bearer('alice')).expect(200);
        await request(server).get('/profile').set(bearer('alice')).expect(429);
      });

      it('a request an auth guard rejects is not counted in interceptor mode', async () => {
        @Injectable()
        class RejectAll implements CanActivate {
          canActivate(): boolean {
            return false;
          }
        }
        @Controller('closed')
        @UseGuards(RejectAll)
        @UseInterceptors(RateLimitInterceptor)
        @RateLimit({ limit: 1, window: '1m' })
        class ClosedController {
          @Get()
          get() {
            return {};
          }
        }
        const app = await platform.boot({
          imports: [RateLimitModule.forRoot({ store: s })],
          controllers: [ClosedController],
        });
        await request(app.getHttpServer()).get('/closed').expect(403);
        await request(app.getHttpServer()).get('/closed').expect(403);
        if (store.name === 'redis') expect(await redisKeys()).toEqual([]);
      });
    });

    describe('subclassed guard registered globally and locally', () => {
      @Injectable()
      class TenantGuard extends RateLimitGuard {
        protected override getKey(context: ExecutionContext): string {
          return `tenant:${context.switchToHttp().getRequest().headers['x-tenant']}`;
        }
      }
      @Controller('tenants')
      @UseGuards(TenantGuard)
      @RateLimit({ limit: 2, window: '1m', name: 'tenant' })
      class TenantsController {
        @Get()
        list() {
          return [];
        }
      }

      it.each([
        ['the base guard global (global: true)', { global: true }, []],
        ['the same subclass as APP_GUARD', {}, [{ provide: APP_GUARD, useClass: TenantGuard }]],
      ])('charges once with %s', async (_label, options, providers) => {
        const app = await platform.boot({
          imports: [RateLimitModule.forRoot({ store: s, ...options })],
          controllers: [TenantsController],
          providers: providers as never[],
        });
        const server = app.getHttpServer();
        const first = await request(server).get('/tenants').set('x-tenant', 'a').expect(200);
        expect(first.headers.ratelimit).toBe('"tenant";r=1;t=50');
        await request(server).get('/tenants').set('x-tenant', 'a').expect(200);
        await request(server).get('/tenants').set('x-tenant', 'a').expect(429);
        await request(server).get('/tenants').set('x-tenant', 'b').expect(200);
        if (store.name === 'redis') {
          const keys = await redisKeys();
          expect(keys.map((k) => k.replace(/^rl:\{([^}]*)\}.*$/, '$1'))).toEqual([
            'tenant:a',
            'tenant:b',
          ]);
        }
      });
    });

    describe('denials', () => {
      it('`errorMessage` sets the message of the Nest-shaped body', async () => {
        const server = (
          await apiApp({
            errorMessage: (_context: ExecutionContext, decision: Decision) =>
              `Slow down: ${decision.policy}`,
          })
        ).getHttpServer();
        await request(server).post('/orders').set(bearer('a')).expect(201);
        const denied = await request(server).post('/orders').set(bearer('a')).expect(429);
        expect(denied.body).toMatchObject({
          statusCode: 429,
          error: 'Too Many Requests',
          message: 'Slow down: orders-create',
          retryAfter: 50_000,
        });
      });

      it('RateLimitExceptionFilter sends problem+json', async () => {
        const server = (
          await apiApp({}, [{ provide: APP_FILTER, useClass: RateLimitExceptionFilter }])
        ).getHttpServer();
        await request(server).post('/orders').set(bearer('a')).expect(201);
        const denied = await request(server).post('/orders').set(bearer('a')).expect(429);
        expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(denied.text)['violated-policies']).toEqual(['orders-create']);
      });

      it('awaits an async throwRateLimitException, and denies if it returns', async () => {
        @Injectable()
        class AsyncGuard extends RateLimitGuard {
          static calls = 0;
          protected override async throwRateLimitException(): Promise<never> {
            AsyncGuard.calls++;
            await new Promise((resolve) => setTimeout(resolve, 5));
            if (AsyncGuard.calls === 1) throw new HttpException({ asyncDenied: true }, 429);
            return undefined as never; // a plain-JS override that forgets to throw
          }
        }
        @Controller('async')
        @UseGuards(AsyncGuard)
        @RateLimit({ limit: 1, window: '1m' })
        class AsyncController {
          @Get()
          get() {
            return { ok: true };
          }
        }
        const app = await platform.boot({
          imports: [RateLimitModule.forRoot({ store: s })],
          controllers: [AsyncController],
        });
        const server = app.getHttpServer();
        await request(server).get('/async').expect(200);
        await request(server).get('/async').expect(429, { asyncDenied: true });
        const again = await request(server).get('/async').expect(429);
        expect(again.body).toMatchObject({ statusCode: 429, message: 'Too Many Requests' });
      });
    });
  },
);

/** The module keys by IP, the route by client id: two keys, two store calls. */
@Controller('keyed')
export class KeyedOrdersController {
  @Post()
  @RateLimit({ limit: 1, window: '1m', name: 'keyed-create', key: 'clientId' })
  create() {
    return { created: true };
  }
}
