/**
 * RateLimitModule, @RateLimit and RateLimitGuard end to end: real Nest applications on Express
 * and on Fastify, over the memory store and the harness Redis, driven by supertest.
 */
import 'reflect-metadata';
import { type Decision, fixedWindow, type Store } from '@floodgate/core';
import { QUOTA_EXCEEDED_TYPE } from '@floodgate/core/http';
import {
  RATE_LIMIT_OPTIONS,
  RateLimit,
  RateLimitExceptionFilter,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleFactoryOptions,
  type RateLimitOptionsFactory,
  RateLimitService,
  RateLimitStore,
} from '@floodgate/nestjs';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  Get,
  HttpException,
  Inject,
  Injectable,
  Module,
  UseGuards,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, HttpAdapterHost } from '@nestjs/core';
import request from 'supertest';
import {
  BearerAuthGuard,
  CASES,
  closeApps,
  DevicesController,
  FirmwareController,
  PlainController,
  RateLimitExceptionSpy,
  RenamedDevicesController,
  redisKeys,
} from './app.js';

const bearer = (clientId: string) => ({ Authorization: `Bearer ${clientId}` });

describe.each(CASES)(
  'RateLimitGuard on $platform.name with the $store.name store',
  ({ platform, store }) => {
    let s: Store;

    beforeEach(async () => {
      s = await store.make();
      RateLimitExceptionSpy.seen = [];
    });
    afterEach(closeApps);
    afterAll(() => store.close());

    /** The usual setup: auth guard, then the global rate-limit guard (see README: guard order). */
    const devicesApp = (extra: { providers?: unknown[]; options?: object } = {}) =>
      platform.boot({
        imports: [RateLimitModule.forRoot({ store: s, global: true, ...extra.options })],
        controllers: [DevicesController],
        providers: [
          { provide: APP_GUARD, useClass: BearerAuthGuard },
          ...((extra.providers ?? []) as never[]),
        ],
      });

    it('limits each client id separately', async () => {
      const server = (await devicesApp()).getHttpServer();
      for (const remaining of [2, 1, 0]) {
        const res = await request(server).get('/devices').set(bearer('app-a')).expect(200);
        expect(res.body).toEqual({ remaining });
      }
      await request(server).get('/devices').set(bearer('app-a')).expect(429);
      await request(server).get('/devices').set(bearer('app-b')).expect(200, { remaining: 2 });
    });

    it('falls back to the client IP when the request is unauthenticated', async () => {
      const server = (await devicesApp()).getHttpServer();
      for (let i = 0; i < 3; i++) await request(server).get('/devices').expect(200);
      await request(server).get('/devices').expect(429);
      // An authenticated client from the same address has its own bucket.
      await request(server).get('/devices').set(bearer('app-a')).expect(200, { remaining: 2 });
      if (store.name === 'redis') {
        // The caller alone is the hash tag; the route is part of the policy's scoped id.
        expect((await redisKeys()).map((k) => k.replace(/:fw[^|]*\|/, ':<id>|'))).toEqual([
          'rl:{client:app-a}:<id>|GET /devices',
          'rl:{ip:127.0.0.1}:<id>|GET /devices',
        ]);
      }
    });

    it("keys 'ip' by the platform's trusted-proxy address, IPv6 grouped by /56", async () => {
      const app = await platform.boot(
        {
          imports: [RateLimitModule.forRoot({ store: s, global: true })],
          controllers: [DevicesController],
        },
        { trustProxy: true },
      );
      const server = app.getHttpServer();
      const from = (ip: string) => request(server).get('/devices/1').set('X-Forwarded-For', ip);
      await from('203.0.113.7').expect(200);
      await from('203.0.113.7').expect(429);
      await from('203.0.113.8').expect(200);
      // One /56: these two share a bucket; the next /56 does not.
      await from('2001:db8:0:ab01::1').expect(200);
      await from('2001:db8:0:abff::2').expect(429);
      await from('2001:db8:0:ac00::1').expect(200);
      if (store.name === 'redis') {
        expect((await redisKeys()).map((k) => k.replace(/:fw[^|]*\|/, ':<id>|'))).toEqual([
          'rl:{ip:2001:db8:0:ab00::/56}:<id>|GET /devices/:id',
          'rl:{ip:2001:db8:0:ac00::/56}:<id>|GET /devices/:id',
          'rl:{ip:203.0.113.7}:<id>|GET /devices/:id',
          'rl:{ip:203.0.113.8}:<id>|GET /devices/:id',
        ]);
      }
    });

    it("applies the handler's @RateLimit instead of the controller's", async () => {
      const server = (await devicesApp()).getHttpServer();
      await request(server).get('/devices/7').set(bearer('app-a')).expect(200, { id: '7' });
      const denied = await request(server).get('/devices/7').set(bearer('app-a')).expect(429);
      expect(denied.body.policy).toBe('device-read');
      // Another route of the controller keeps its own count under the controller's policy.
      await request(server).get('/devices').set(bearer('app-a')).expect(200, { remaining: 2 });
    });

    it('charges the decorator cost against its policies', async () => {
      const server = (await devicesApp()).getHttpServer();
      const first = await request(server)
        .post('/devices/7/reboot')
        .set(bearer('app-a'))
        .expect(201);
      expect(first.headers.ratelimit).toBe('"reboots";r=2;t=50');
      await request(server).post('/devices/7/reboot').set(bearer('app-a')).expect(201);
      await request(server).post('/devices/7/reboot').set(bearer('app-a')).expect(429);
    });

    it('@SkipRateLimit() routes are neither counted nor given headers', async () => {
      const server = (await devicesApp()).getHttpServer();
      for (let i = 0; i < 5; i++) {
        const res = await request(server).get('/devices/health/live').expect(200);
        expect(res.headers.ratelimit).toBeUndefined();
      }
      await request(server).get('/devices').expect(200, { remaining: 2 });
    });

    it("sets the IETF headers, Retry-After and Nest's error body with the decision", async () => {
      const server = (await devicesApp()).getHttpServer();
      const ok = await request(server).get('/devices').set(bearer('app-a')).expect(200);
      // The clock stands 10 s into its minute: 50 s to the end of the fixed window.
      expect(ok.headers['ratelimit-policy']).toBe('"fixed-3-per-60s";q=3;w=60');
      expect(ok.headers.ratelimit).toBe('"fixed-3-per-60s";r=2;t=50');
      expect(ok.headers['x-ratelimit-limit']).toBeUndefined();
      expect(ok.headers['retry-after']).toBeUndefined();
      await request(server).get('/devices').set(bearer('app-a'));
      await request(server).get('/devices').set(bearer('app-a'));
      const denied = await request(server).get('/devices').set(bearer('app-a')).expect(429);
      expect(denied.headers['retry-after']).toBe('50');
      expect(denied.headers.ratelimit).toBe('"fixed-3-per-60s";r=0;t=50');
      expect(denied.body).toEqual({
        statusCode: 429,
        message: 'Too Many Requests',
        error: 'Too Many Requests',
        policy: 'fixed-3-per-60s',
        limit: 3,
        remaining: 0,
        retryAfter: 50_000,
        resetAfter: 50_000,
      });
    });

    it('sends the legacy X-RateLimit headers when asked', async () => {
      const app = await devicesApp({ options: { headers: { legacy: true, standard: false } } });
      const before = Math.ceil(Date.now() / 1000);
      const res = await request(app.getHttpServer()).get('/devices').expect(200);
      const after = Math.ceil(Date.now() / 1000);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      expect(res.headers['x-ratelimit-remaining']).toBe('2');
      // Reset is epoch seconds on the process clock: now + the 50 s left in the window.
      const reset = Number(res.headers['x-ratelimit-reset']);
      expect(reset).toBeGreaterThanOrEqual(before + 50);
      expect(reset).toBeLessThanOrEqual(after + 50);
      expect(res.headers.ratelimit).toBeUndefined();
    });

    it('lets exception filters see RateLimitException with its decision', async () => {
      const app = await devicesApp({
        providers: [{ provide: APP_FILTER, useClass: RateLimitExceptionSpy }],
      });
      const server = app.getHttpServer();
      await request(server).get('/devices/1').set(bearer('app-a')).expect(200);
      const res = await request(server).get('/devices/1').set(bearer('app-a')).expect(429);
      expect(res.body).toEqual({ error: 'slow down', policy: 'device-read' });
      expect(res.headers['retry-after']).toBe('50');
      expect(RateLimitExceptionSpy.seen).toHaveLength(1);
      const [seen] = RateLimitExceptionSpy.seen;
      expect(seen).toBeInstanceOf(HttpException);
      expect(seen!.getStatus()).toBe(429);
      expect(seen!.decision).toMatchObject({ allowed: false, policy: 'device-read', remaining: 0 });
    });

    it('RateLimitExceptionFilter sends the problem as application/problem+json', async () => {
      const app = await devicesApp({
        providers: [{ provide: APP_FILTER, useClass: RateLimitExceptionFilter }],
      });
      const server = app.getHttpServer();
      await request(server).get('/devices/1').expect(200);
      const res = await request(server).get('/devices/1').expect(429);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(res.text)).toEqual({
        type: QUOTA_EXCEEDED_TYPE,
        title: 'Quota Exceeded',
        status: 429,
        detail: 'Too many requests under policy "device-read"; retry in 50 s.',
        'violated-policies': ['device-read'],
      });
      expect(res.headers['retry-after']).toBe('50');
    });

    it('charges once when the global guard and @UseGuards(RateLimitGuard) both run', async () => {
      const app = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s, global: true })],
        controllers: [FirmwareController],
      });
      const server = app.getHttpServer();
      const first = await request(server).get('/firmware').expect(200);
      expect(first.headers.ratelimit).toBe('"fixed-2-per-60s";r=1;t=50');
      await request(server).get('/firmware').expect(200);
      await request(server).get('/firmware').expect(429);
    });

    it('keys storage by method and route path, not by class or method name', async () => {
      const first = await devicesApp();
      await request(first.getHttpServer()).get('/devices').set(bearer('app-a')).expect(200);
      await request(first.getHttpServer()).get('/devices').set(bearer('app-a')).expect(200);
      await first.close();
      // A renamed controller (another class, another method) on the same store and route.
      const renamed = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s, global: true })],
        controllers: [RenamedDevicesController],
        providers: [{ provide: APP_GUARD, useClass: BearerAuthGuard }],
      });
      const res = await request(renamed.getHttpServer()).get('/devices').set(bearer('app-a'));
      expect(res.status).toBe(200);
      expect(res.headers.ratelimit).toBe('"fixed-3-per-60s";r=0;t=50');
      await request(renamed.getHttpServer()).get('/devices').set(bearer('app-a')).expect(429);
    });

    it("applies the module's policies to undecorated routes, and no limit without them", async () => {
      const limited = await platform.boot({
        imports: [
          RateLimitModule.forRoot({
            store: s,
            global: true,
            policies: fixedWindow({ limit: 1, window: '1m', name: 'default' }),
          }),
        ],
        controllers: [PlainController],
      });
      await request(limited.getHttpServer()).get('/plain').expect(200);
      await request(limited.getHttpServer()).get('/plain').expect(429);

      const open = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s, global: true })],
        controllers: [PlainController],
      });
      for (let i = 0; i < 3; i++) {
        const res = await request(open.getHttpServer()).get('/plain').expect(200);
        expect(res.headers.ratelimit).toBeUndefined();
      }
    });

    it('works as a controller guard listed after the auth guard, without global', async () => {
      @Controller('scoped')
      @UseGuards(BearerAuthGuard, RateLimitGuard)
      @RateLimit({ limit: 1, window: '1m', key: 'clientId' })
      class ScopedController {
        @Get()
        scoped() {
          return { ok: true };
        }
      }
      const app = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s })],
        controllers: [ScopedController, PlainController],
      });
      const server = app.getHttpServer();
      await request(server).get('/scoped').set(bearer('app-a')).expect(200);
      await request(server).get('/scoped').set(bearer('app-a')).expect(429);
      await request(server).get('/scoped').set(bearer('app-b')).expect(200);
      // Without `global: true` nothing else is guarded.
      const plain = await request(server).get('/plain').expect(200);
      expect(plain.headers.ratelimit).toBeUndefined();
    });

    it('runs after a global auth guard from a module imported before RateLimitModule', async () => {
      // Nest runs global guards in registration order: AppModule's providers, then its imports
      // in order. Importing AuthModule after RateLimitModule would put the limiter first.
      @Module({ providers: [{ provide: APP_GUARD, useClass: BearerAuthGuard }] })
      class AuthModule {}
      const app = await platform.boot({
        imports: [AuthModule, RateLimitModule.forRoot({ store: s, global: true })],
        controllers: [DevicesController],
      });
      await request(app.getHttpServer()).get('/devices/1').set(bearer('app-a')).expect(200);
      await request(app.getHttpServer()).get('/devices/1').set(bearer('app-b')).expect(200);
      await request(app.getHttpServer()).get('/devices/1').set(bearer('app-a')).expect(429);
    });

    it('can be subclassed through getKey, getPolicies and throwRateLimitException', async () => {
      @Injectable()
      class TenantGuard extends RateLimitGuard {
        protected override getKey(context: ExecutionContext): string {
          return `tenant:${context.switchToHttp().getRequest().headers['x-tenant']}`;
        }
        // A new array per request: equal policy sets still share one limiter.
        protected override getPolicies() {
          return [fixedWindow({ limit: 2, window: '1m', name: 'tenant' })];
        }
        protected override throwRateLimitException(_: ExecutionContext, decision: Decision): never {
          throw new HttpException({ tenantLimited: decision.policy }, 429);
        }
      }
      @Controller('tenants')
      @UseGuards(TenantGuard)
      class TenantsController {
        @Get()
        list() {
          return [];
        }
      }
      const app = await platform.boot({
        imports: [RateLimitModule.forRoot({ store: s })],
        controllers: [TenantsController],
      });
      const server = app.getHttpServer();
      await request(server).get('/tenants').set('x-tenant', 'a').expect(200);
      await request(server).get('/tenants').set('x-tenant', 'a').expect(200);
      const denied = await request(server).get('/tenants').set('x-tenant', 'a').expect(429);
      expect(denied.body).toEqual({ tenantLimited: 'tenant' });
      expect(denied.headers['retry-after']).toBe('50');
      await request(server).get('/tenants').set('x-tenant', 'b').expect(200);
      expect(
        app
          .get(RateLimitService)
          .limiter([fixedWindow({ limit: 2, window: '1m', name: 'tenant' })]),
      ).toBe(
        app
          .get(RateLimitService)
          .limiter([fixedWindow({ limit: 2, window: '1m', name: 'tenant' })]),
      );
    });

    describe('run before the auth guard', () => {
      // The wrong order, on purpose: request.user is not set yet when the limiter runs.
      @Controller('misordered')
      @UseGuards(RateLimitGuard, BearerAuthGuard)
      @RateLimit({ limit: 1, window: '1m', key: ['clientId', 'ip'] })
      class MisorderedController {
        @Get()
        misordered() {
          return { ok: true };
        }
      }

      it('refuses to put clients with credentials but no principal into one bucket', async () => {
        const errors: unknown[] = [];
        @Catch()
        class CatchAll implements ExceptionFilter {
          constructor(private readonly host: HttpAdapterHost) {}
          catch(error: unknown, host: ArgumentsHost): void {
            errors.push(error);
            const status = error instanceof HttpException ? error.getStatus() : 500;
            this.host.httpAdapter.reply(host.switchToHttp().getResponse(), {}, status);
          }
        }
        const app = await platform.boot({
          imports: [RateLimitModule.forRoot({ store: s })],
          controllers: [MisorderedController],
          providers: [{ provide: APP_FILTER, useClass: CatchAll }],
        });
        await request(app.getHttpServer()).get('/misordered').set(bearer('app-a')).expect(500);
        expect(errors[0]).toMatchObject({
          name: 'RateLimitConfigError',
          code: 'FLOODGATE_GUARD_ORDER',
        });
        expect((errors[0] as Error).message).toMatch(/mode: "interceptor"/);
        // Without credentials there is nothing to wait for: the IP is the key.
        await request(app.getHttpServer()).get('/misordered').expect(200);
        await request(app.getHttpServer()).get('/misordered').expect(429);
      });

      it("falls back to the next key source with onMissingPrincipal: 'fallback'", async () => {
        const app = await platform.boot({
          imports: [RateLimitModule.forRoot({ store: s, onMissingPrincipal: 'fallback' })],
          controllers: [MisorderedController],
        });
        await request(app.getHttpServer()).get('/misordered').set(bearer('app-a')).expect(200);
        await request(app.getHttpServer()).get('/misordered').set(bearer('app-b')).expect(429);
      });
    });

    describe('forRootAsync', () => {
      const POLICIES = 'POLICIES';

      @Module({
        providers: [
          { provide: POLICIES, useValue: fixedWindow({ limit: 2, window: '1m', name: 'async' }) },
        ],
        exports: [POLICIES],
      })
      class SettingsModule {}

      @Injectable()
      class RateLimitSettings implements RateLimitOptionsFactory {
        static store: Store;
        constructor(@Inject(POLICIES) private readonly policies: ReturnType<typeof fixedWindow>) {}
        createRateLimitOptions(): RateLimitModuleFactoryOptions {
          return { store: RateLimitSettings.store, policies: this.policies };
        }
      }

      @Module({
        imports: [SettingsModule],
        providers: [RateLimitSettings],
        exports: [RateLimitSettings],
      })
      class RateLimitSettingsModule {}

      const variants = {
        useFactory: () =>
          RateLimitModule.forRootAsync({
            imports: [SettingsModule],
            inject: [POLICIES],
            useFactory: async (policies: ReturnType<typeof fixedWindow>) => ({
              store: s,
              policies,
            }),
            global: true,
          }),
        useClass: () =>
          RateLimitModule.forRootAsync({
            imports: [SettingsModule],
            useClass: RateLimitSettings,
            global: true,
          }),
        useExisting: () =>
          RateLimitModule.forRootAsync({
            imports: [RateLimitSettingsModule],
            useExisting: RateLimitSettings,
            global: true,
          }),
      };

      it.each(Object.keys(variants) as (keyof typeof variants)[])('with %s', async (variant) => {
        RateLimitSettings.store = s;
        const app = await platform.boot({
          imports: [variants[variant]()],
          controllers: [PlainController],
        });
        const res = await request(app.getHttpServer()).get('/plain').expect(200);
        expect(res.headers['ratelimit-policy']).toBe('"async";q=2;w=60');
        await request(app.getHttpServer()).get('/plain').expect(200);
        await request(app.getHttpServer()).get('/plain').expect(429);
        expect(app.get(RateLimitStore)).toBe(s);
        // Identity, not toMatchObject: a deep walk of a store that has held many keys can
        // overflow the stack (seen once in the full suite).
        expect(app.get(RATE_LIMIT_OPTIONS).store).toBe(s);
      });
    });
  },
);
