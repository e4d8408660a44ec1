/**
 * What a Nest user and an attacker try against the protection options: shadow mode's headers,
 * policy functions that throw or churn the limiter cache, exception filters that rewrite
 * statuses, forged X-Forwarded-For against an allowlist, count functions that reject, and login
 * bodies with odd usernames. Express and Fastify, memory store and the harness Redis.
 */
import 'reflect-metadata';
import { type Decision, fixedWindow, type Store } from '@floodgate/core';
import { RateLimit, RateLimitGuard, RateLimitModule, RateLimitService } from '@floodgate/nestjs';
import {
  type ArgumentsHost,
  Body,
  type CanActivate,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  Get,
  Headers,
  HttpCode,
  Injectable,
  Post,
  Req,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import { APP_FILTER, HttpAdapterHost } from '@nestjs/core';
import request from 'supertest';
import { CASES, closeApps, globalModuleBoot, PLATFORMS, STORES } from './app.js';

@Controller('plain')
class PlainController {
  @Get()
  get() {
    return { ok: true };
  }
}

const tenantOf = (context: ExecutionContext) =>
  String(context.switchToHttp().getRequest().headers['x-tenant'] ?? 'none');

@Controller('tenants')
class TenantsController {
  @Get()
  @RateLimit({
    key: (context) => tenantOf(context),
    policies: (context) =>
      fixedWindow({ limit: 2, window: '1m', name: `tenant-${tenantOf(context)}` }),
  })
  get() {
    return { ok: true };
  }
}

@Controller('broken')
class BrokenPoliciesController {
  @Get()
  @RateLimit({
    policies: () => {
      throw new Error('plan lookup failed');
    },
  })
  get() {
    return { ok: true };
  }
}

@Controller('login')
class LoginController {
  @Post()
  @HttpCode(200)
  @RateLimit({ limit: 2, window: '1m', name: 'login', count: 'failed' })
  login(@Body() body: { password?: unknown }) {
    if (body?.password !== 'secret') throw new UnauthorizedException('wrong password');
    return { ok: true };
  }
}

/** The login recipe: a success resets the per-user key. */
@Controller('signin')
class SignInController {
  constructor(private readonly rateLimit: RateLimitService) {}

  @Post()
  @HttpCode(200)
  @RateLimit([
    { limit: 5, window: '1m', name: 'per-ip', key: 'ip', count: 'failed' },
    {
      limit: 1,
      window: '1m',
      name: 'per-user',
      key: (c) => `user:${c.switchToHttp().getRequest().body?.username}`,
      count: 'failed',
    },
  ])
  async login(@Req() req: object, @Body() body: { username?: string; password?: unknown }) {
    if (body?.password !== 'secret') throw new UnauthorizedException('wrong password');
    await this.rateLimit.reset(req, { policy: 'per-user' });
    return { ok: true };
  }
}

/** Passport's LocalAuthGuard in miniature: a wrong password is a 401 from a guard. */
@Injectable()
class CredentialsGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (context.switchToHttp().getRequest().body?.password !== 'secret') {
      throw new UnauthorizedException('wrong password');
    }
    return true;
  }
}

@Controller('passport')
class PassportLoginController {
  @Post()
  @HttpCode(200)
  @UseGuards(RateLimitGuard, CredentialsGuard)
  @RateLimit({ limit: 2, window: '1m', name: 'passport', count: 'failed' })
  login() {
    return { ok: true };
  }
}

/** A captcha that lifts its own limit, beside a module policy under the same key. */
@Controller('captcha')
class CaptchaController {
  constructor(private readonly rateLimit: RateLimitService) {}

  @Post()
  @RateLimit({ limit: 1, window: '1m', name: 'captcha' })
  async solve(@Req() req: object) {
    await this.rateLimit.reset(req, { policy: 'captcha' });
    return { ok: true };
  }
}

/** An app's filter that answers every error 200 `{ ok: false }` (some APIs do). */
@Catch()
class Always200Filter implements ExceptionFilter {
  constructor(private readonly host: HttpAdapterHost) {}
  catch(_exception: unknown, host: ArgumentsHost): void {
    this.host.httpAdapter.reply(host.switchToHttp().getResponse(), { ok: false }, 200);
  }
}

@Controller('rejects')
class RejectingCountController {
  @Get()
  @RateLimit({
    limit: 2,
    window: '1m',
    name: 'rejects',
    count: async () => {
      throw new Error('a rejected count');
    },
  })
  get(@Headers('x-n') _n?: string) {
    return { ok: true };
  }
}

describe.each(CASES)(
  'review of @floodgate/nestjs on $platform.name, $store.name store',
  ({ platform, store }) => {
    let s: Store;
    beforeEach(async () => {
      s = await store.make();
    });
    afterEach(closeApps);
    afterAll(() => store.close());

    const boot = globalModuleBoot(platform, () => s);

    it('shadow mode with headers sends no Retry-After on a would-be denial', async () => {
      const server = (
        await boot([PlainController], {
          shadow: true,
          policies: fixedWindow({ limit: 1, window: '1m', name: 'api' }),
          headers: true,
        })
      ).getHttpServer();
      await request(server).get('/plain').expect(200);
      const over = await request(server).get('/plain').expect(200);
      expect(over.headers.ratelimit).toBe('"api";r=0;t=50');
      expect(over.headers['retry-after']).toBeUndefined();
    });

    it('a policies function that throws is a 500, and the app keeps serving', async () => {
      const server = (await boot([BrokenPoliciesController, PlainController])).getHttpServer();
      const res = await request(server).get('/broken').expect(500);
      expect(res.body.statusCode).toBe(500);
      await request(server).get('/plain').expect(200);
    });

    it('1 000 other tenants churning the limiter cache do not reset a budget', async () => {
      const app = await boot([TenantsController]);
      const server = app.getHttpServer();
      const get = (tenant: string) => request(server).get('/tenants').set('x-tenant', tenant);
      await get('victim').expect(200);
      await get('victim').expect(200);
      await get('victim').expect(429);
      for (let i = 0; i < 1001; i++) await get(`t${i}`).expect(200);
      await get('victim').expect(429);
    }, 60_000);

    it("count: 'failed' behind a filter that answers errors 200 refunds them (status decides)", async () => {
      const server = (
        await boot([LoginController], {}, [{ provide: APP_FILTER, useClass: Always200Filter }])
      ).getHttpServer();
      for (let i = 0; i < 3; i++) {
        await request(server).post('/login').send({ password: 'guess' }).expect(200, { ok: false });
      }
    });

    it('a rejecting async count function: one warning, no unhandled rejection', async () => {
      const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const server = (await boot([RejectingCountController])).getHttpServer();
        await request(server).get('/rejects').expect(200);
        await request(server).get('/rejects').expect(200);
        await request(server).get('/rejects').expect(429);
        await new Promise((resolve) => setImmediate(resolve));
        expect(warn.mock.calls.map(([, o]) => (o as { code?: string })?.code)).toEqual([
          'FLOODGATE_HOOK_ERROR',
        ]);
        expect(unhandled).toEqual([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
        warn.mockRestore();
      }
    });

    it('reset(request) on a request the allowlist or skip let through resets, no 500', async () => {
      for (const options of [{ allow: ['127.0.0.1', '::1'] }, { skip: () => true }]) {
        const server = (await boot([SignInController], options)).getHttpServer();
        await request(server)
          .post('/signin')
          .send({ username: 'alice', password: 'secret' })
          .expect(200, { ok: true });
        await closeApps();
      }
    });

    it('interceptor mode: the login route names the guard before the credentials guard, failures count once', async () => {
      const server = (
        await boot([PassportLoginController], { mode: 'interceptor' })
      ).getHttpServer();
      const login = (password: string) => request(server).post('/passport').send({ password });
      await login('secret').expect(200);
      await login('guess').expect(401);
      const again = await login('secret').expect(200);
      expect(again.headers.ratelimit).toBe('"passport";r=0;t=50');
      await login('guess').expect(401);
      await login('guess').expect(429);
    });

    it("reset(request, { policy }) leaves the module's policy under the same key alone", async () => {
      const server = (
        await boot([CaptchaController], {
          policies: fixedWindow({ limit: 3, window: '1m', name: 'api' }),
        })
      ).getHttpServer();
      for (let i = 0; i < 3; i++) await request(server).post('/captcha').expect(201);
      await request(server).post('/captcha').expect(429);
    });

    it('a forged X-Forwarded-For does not reach the allowlist without trust proxy', async () => {
      const server = (
        await boot([PlainController], {
          allow: ['10.0.0.0/8'],
          policies: fixedWindow({ limit: 1, window: '1m', name: 'api' }),
        })
      ).getHttpServer();
      const forged = () => request(server).get('/plain').set('X-Forwarded-For', '10.0.0.1');
      await forged().expect(200);
      await forged().expect(429);
    });
  },
);

export type { Decision };

describe('@floodgate/nestjs on Express with every proxy hop trusted', () => {
  afterEach(closeApps);

  it('warns FLOODGATE_PROXY_HOPS, as the Express adapter does, when a forged X-Forwarded-For meets the allowlist', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const express = PLATFORMS.find((p) => p.name === 'express')!;
      const app = await express.boot(
        {
          imports: [
            RateLimitModule.forRoot({
              store: await STORES[0]!.make(),
              global: true,
              allow: ['10.0.0.0/8'],
              policies: fixedWindow({ limit: 1, window: '1m', name: 'api' }),
            }),
          ],
          controllers: [PlainController],
        },
        { trustProxy: true },
      );
      await request(app.getHttpServer()).get('/plain').set('X-Forwarded-For', '10.0.0.1');
      expect(warn.mock.calls.map(([, o]) => (o as { code?: string })?.code)).toContain(
        'FLOODGATE_PROXY_HOPS',
      );
    } finally {
      warn.mockRestore();
    }
  });
});
