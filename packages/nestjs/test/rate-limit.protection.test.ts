/**
 * Protection and flexibility options through RateLimitModule and @RateLimit (the names the
 * Express and Koa adapters take): counting by outcome, lockouts and manual blocks, policies
 * chosen per request, shadow mode and resets from a request, on Express and Fastify over the
 * memory store and the harness Redis.
 */
import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Decision, fixedWindow, type Store } from '@floodgate/core';
import {
  RateLimit,
  RateLimitDecision,
  type RateLimitDecisionView,
  RateLimitGuard,
  RateLimitModule,
  RateLimitService,
} from '@floodgate/nestjs';
import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  Headers,
  type INestApplication,
  Injectable,
  Post,
  Req,
  Res,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import request from 'supertest';
import { BoundedCache } from '../src/internal/bounded-cache.js';
import { CASES, closeApps, globalModuleBoot, NOW, redisKeys } from './app.js';

/** 401 for `x-result: fail`, 500 for `crash`, else 201. */
function answer(result: string | undefined) {
  if (result === 'fail') throw new UnauthorizedException('wrong password');
  if (result === 'crash') throw new Error('crash');
  return { ok: true };
}

const statusOf = (response: unknown) => (response as { statusCode: number }).statusCode;

/** Lets the aborted-request test hold a handler until the client has gone. */
const slow = { arrived: (): void => {}, closed: Promise.resolve() };

@Controller('outcome')
class OutcomeController {
  @Post('failed')
  @RateLimit({ limit: 2, window: '1m', name: 'failures', count: 'failed' })
  failed(@Headers('x-result') result?: string) {
    return answer(result);
  }

  @Post('succeeded')
  @RateLimit({ limit: 2, window: '1m', name: 'successes', count: 'succeeded' })
  succeeded(@Headers('x-result') result?: string) {
    return answer(result);
  }

  @Post('predicate')
  @RateLimit({
    limit: 2,
    window: '1m',
    name: 'unauthorized',
    count: async (_context, response) => {
      await Promise.resolve();
      return statusOf(response) === 401;
    },
  })
  predicate(@Headers('x-result') result?: string) {
    return answer(result);
  }

  @Post('throws')
  @RateLimit({
    limit: 2,
    window: '1m',
    name: 'throws',
    count: () => {
      throw new Error('a broken count function');
    },
  })
  throws() {
    return { ok: true };
  }

  @Get('slow')
  @RateLimit({ limit: 1, window: '1m', name: 'slow', count: 'succeeded' })
  async slowly(
    @Headers('x-fast') fast: string | undefined,
    @Res({ passthrough: true }) res: unknown,
  ) {
    if (fast !== '1') {
      const raw = ((res as { raw?: unknown }).raw ?? res) as NodeJS.EventEmitter;
      slow.closed = new Promise((resolve) => raw.once('close', resolve));
      slow.arrived();
      await slow.closed;
    }
    return { ok: true };
  }
}

@Controller('lock')
class LockController {
  constructor(private readonly rateLimit: RateLimitService) {}

  @Get()
  @RateLimit({ limit: 2, window: '1m', name: 'tries', blockDuration: '10m' })
  get() {
    return { ok: true };
  }

  @Get('progressive')
  @RateLimit({
    policies: fixedWindow({
      limit: 1,
      window: '1m',
      name: 'progressive',
      blockDuration: { initial: '1m', multiplier: 2, max: '1h', forgetAfter: '1d' },
    }),
  })
  progressive() {
    return { ok: true };
  }

  /** Two keys (per IP, per user): the per-user lockout must still start. */
  @Post('login')
  @RateLimit([
    { limit: 10, window: '1m', name: 'ip', key: 'ip', count: 'failed' },
    {
      limit: 1,
      window: '1m',
      name: 'user',
      key: (c) => `user:${clientKey(c)}`,
      blockDuration: '10m',
      count: 'failed',
    },
  ])
  login(@Headers('x-result') result?: string) {
    return answer(result);
  }

  /** Blocks the caller on GET /lock. */
  @Post('ban')
  async ban(@Req() req: object) {
    await this.rateLimit.block(req, '5m', { handler: [LockController, 'get'] });
    return { banned: true };
  }

  @Post('unban')
  async unban(@Req() req: object) {
    await this.rateLimit.unblock(req, { handler: [LockController, 'get'] });
    return { unbanned: true };
  }
}

const PLANS: Record<string, number> = { free: 2, pro: 5 };
const planOf = (context: ExecutionContext) =>
  String(context.switchToHttp().getRequest().headers['x-plan'] ?? 'free');
/** A new policy object on every call: equal sets must still share one limiter. */
const planPolicy = (context: ExecutionContext) =>
  fixedWindow({ limit: PLANS[planOf(context)]!, window: '1m', name: `plan-${planOf(context)}` });
const clientKey = (context: ExecutionContext) =>
  String(context.switchToHttp().getRequest().headers['x-client']);

@Controller('plans')
class PlansController {
  @Get()
  @RateLimit({ key: clientKey, policies: planPolicy })
  get() {
    return { ok: true };
  }
}

/** The same policy with and without a lockout, chosen per request. */
@Controller('strictness')
class StrictnessController {
  @Get()
  @RateLimit({
    key: clientKey,
    policies: (context) =>
      fixedWindow({
        limit: 1,
        window: '1m',
        name: 'strictness',
        ...(planOf(context) === 'strict' ? { blockDuration: '10m' } : {}),
      }),
  })
  get() {
    return { ok: true };
  }
}

@Controller('plain')
class PlainController {
  @Get()
  get(@RateLimitDecision() decision: RateLimitDecisionView | undefined) {
    return { allowed: decision?.allowed ?? null, shadow: decision?.shadow ?? null };
  }
}

/** Names the guard itself too: with `global: true` two guards run, one charges and refunds. */
@Controller('twice')
@UseGuards(RateLimitGuard)
@RateLimit({ limit: 2, window: '1m', name: 'twice', count: 'failed' })
class TwiceGuardedController {
  @Post()
  post(@Headers('x-result') result?: string) {
    return answer(result);
  }
}

/** Lists per limit: the office network skips the strict limit; a banned header gets 403. */
@Controller('office')
class OfficeController {
  @Get()
  @RateLimit([
    { limit: 1, window: '1m', name: 'outside', key: 'ip', allow: ['10.0.0.0/8'] },
    {
      limit: 3,
      window: '1m',
      name: 'everyone',
      key: 'ip',
      deny: (c) => c.switchToHttp().getRequest().headers['x-banned'] === '1',
    },
  ])
  get() {
    return { ok: true };
  }
}

@Controller('shadow')
class ShadowController {
  @Get()
  @RateLimit({ limit: 1, window: '1m', name: 'trial', shadow: true })
  get(@RateLimitDecision() decision: RateLimitDecisionView) {
    return { allowed: decision.allowed, shadow: decision.shadow, policy: decision.policy };
  }

  @Get('enforced')
  @RateLimit({ limit: 1, window: '1m', name: 'enforced' })
  enforced() {
    return { ok: true };
  }
}

/** A solved captcha lifts the caller's limit on the route it guards, before the limiter runs. */
@Injectable()
class CaptchaGuard implements CanActivate {
  constructor(private readonly rateLimit: RateLimitService) {}
  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.switchToHttp().getRequest().headers['x-captcha'] === 'solved') {
      await this.rateLimit.reset(context);
    }
    return true;
  }
}

@Controller('reset')
class ResetController {
  constructor(private readonly rateLimit: RateLimitService) {}

  @Get()
  @RateLimit({ limit: 1, window: '1m', name: 'captcha' })
  get() {
    return { ok: true };
  }

  /** Per IP and per user; a successful call resets the per-user key only. */
  @Post('login')
  @RateLimit([
    { limit: 3, window: '1m', name: 'per-ip', key: 'ip' },
    { limit: 1, window: '1m', name: 'per-user', key: (c) => `user:${clientKey(c)}` },
  ])
  async login(@Req() req: object, @Headers('x-result') result?: string) {
    answer(result);
    await this.rateLimit.reset(req, { policy: 'per-user' });
    return { ok: true };
  }
}

/** An HTTP GET the test aborts once the handler has it. */
async function abortedGet(app: INestApplication, path: string): Promise<void> {
  const server = app.getHttpServer();
  if (!server.listening) await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const arrived = new Promise<void>((resolve) => {
    slow.arrived = resolve;
  });
  const req = httpRequest({ host: '127.0.0.1', port, path });
  req.on('error', () => {});
  req.end();
  await arrived;
  req.destroy();
  await slow.closed;
}

describe('the limiter cache', () => {
  it('keeps at most its size, dropping the least recently used', () => {
    const cache = new BoundedCache<string, number>(2);
    let made = 0;
    const get = (key: string) => cache.get(key, () => ++made);
    expect([get('a'), get('b'), get('a'), get('c')]).toEqual([1, 2, 1, 3]);
    expect(cache.length).toBe(2);
    expect(get('a')).toBe(1); // kept: used after "b"
    expect(get('b')).toBe(4); // rebuilt: "b" was the least recently used
  });
});

describe.each(CASES)(
  '@floodgate/nestjs protection on $platform.name with the $store.name store',
  ({ platform, store }) => {
    let s: Store;
    beforeEach(async () => {
      s = await store.make();
    });
    afterEach(closeApps);
    afterAll(() => store.close());

    const boot = globalModuleBoot(platform, () => s);

    describe('count by outcome', () => {
      it("'failed' refunds successes and counts errors, Nest's mapped exceptions included", async () => {
        const server = (await boot([OutcomeController])).getHttpServer();
        for (let i = 0; i < 4; i++) {
          const ok = await request(server).post('/outcome/failed').expect(201);
          expect(ok.headers.ratelimit).toBe('"failures";r=1;t=50');
        }
        await request(server).post('/outcome/failed').set('x-result', 'fail').expect(401);
        await request(server).post('/outcome/failed').set('x-result', 'crash').expect(500);
        const denied = await request(server).post('/outcome/failed').expect(429);
        expect(denied.body.policy).toBe('failures');
      });

      it('refunds once when a global and a route guard both run', async () => {
        const server = (await boot([TwiceGuardedController])).getHttpServer();
        await request(server).post('/twice').set('x-result', 'fail').expect(401);
        const ok = await request(server).post('/twice').expect(201);
        expect(ok.headers.ratelimit).toBe('"twice";r=0;t=50');
        await request(server).post('/twice').set('x-result', 'fail').expect(401);
        // A second refund of the success would have given back a failure's unit.
        await request(server).post('/twice').expect(429);
      });

      it("'succeeded' refunds failures", async () => {
        const server = (await boot([OutcomeController])).getHttpServer();
        for (let i = 0; i < 3; i++) {
          await request(server).post('/outcome/succeeded').set('x-result', 'fail').expect(401);
        }
        await request(server).post('/outcome/succeeded').expect(201);
        await request(server).post('/outcome/succeeded').expect(201);
        await request(server).post('/outcome/succeeded').expect(429);
      });

      it('an aborted request is failed: refunded under succeeded', async () => {
        const app = await boot([OutcomeController]);
        await abortedGet(app, '/outcome/slow');
        await abortedGet(app, '/outcome/slow');
        const server = app.getHttpServer();
        await request(server).get('/outcome/slow').set('x-fast', '1').expect(200);
        await request(server).get('/outcome/slow').set('x-fast', '1').expect(429);
      });

      it('an async predicate decides from the response', async () => {
        const server = (await boot([OutcomeController])).getHttpServer();
        for (let i = 0; i < 3; i++) await request(server).post('/outcome/predicate').expect(201);
        await request(server).post('/outcome/predicate').set('x-result', 'crash').expect(500);
        await request(server).post('/outcome/predicate').set('x-result', 'fail').expect(401);
        await request(server).post('/outcome/predicate').set('x-result', 'fail').expect(401);
        await request(server).post('/outcome/predicate').expect(429);
      });

      it('a throwing predicate counts the request and breaks nothing', async () => {
        const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
        try {
          const server = (await boot([OutcomeController])).getHttpServer();
          await request(server).post('/outcome/throws').expect(201);
          await request(server).post('/outcome/throws').expect(201);
          await request(server).post('/outcome/throws').expect(429);
          expect(warn.mock.calls.map(([, o]) => (o as { code?: string })?.code)).toEqual([
            'FLOODGATE_HOOK_ERROR',
          ]);
        } finally {
          warn.mockRestore();
        }
      });

      it('a failing refund leaves the response alone and the request counted', async () => {
        const failing: Store = {
          kind: s.kind,
          connection: s.connection ?? s,
          prepare(policies) {
            const prepared = s.prepare(policies);
            return {
              ...prepared,
              decide: prepared.decide.bind(prepared),
              ...(prepared.decideNow ? { decideNow: prepared.decideNow.bind(prepared) } : {}),
              refund: () => Promise.reject(new Error('the store went away')),
            };
          },
        };
        const failures: string[] = [];
        const server = (
          await boot([OutcomeController], {
            store: failing,
            hooks: { onStoreError: (e: { error: Error }) => failures.push(e.error.message) },
          })
        ).getHttpServer();
        await request(server).post('/outcome/failed').expect(201);
        await request(server).post('/outcome/failed').expect(201);
        await request(server).post('/outcome/failed').expect(429);
        // The failure policy answered each refund; the onStoreError hook saw why.
        expect(failures).toHaveLength(2);
        for (const f of failures) expect(f).toContain('the store went away');
      });
    });

    describe('lockouts and blocks', () => {
      it('blockDuration in the shorthand: a block answers 429 with its remaining time', async () => {
        const server = (await boot([LockController])).getHttpServer();
        await request(server).get('/lock').expect(200);
        await request(server).get('/lock').expect(200);
        await request(server).get('/lock').expect(429);
        const blocked = await request(server).get('/lock').expect(429);
        expect(blocked.headers['retry-after']).toBe('600');
        expect(blocked.body).toMatchObject({
          statusCode: 429,
          blocked: true,
          policy: 'tries',
          retryAfter: 600_000,
        });
      });

      it('a lockout starts when a limit under a second key denies', async () => {
        const server = (await boot([LockController])).getHttpServer();
        const login = () => request(server).post('/lock/login').set('x-client', 'eve');
        await login().set('x-result', 'fail').expect(401);
        const denied = await login().expect(429);
        expect(denied.body.policy).toBe('user');
        const blocked = await login().expect(429);
        expect(blocked.body).toMatchObject({ blocked: true, policy: 'user', retryAfter: 600_000 });
        expect(blocked.headers['retry-after']).toBe('600');
      });

      it('progressive lockouts double the block', async () => {
        let now = NOW;
        s = await store.make(() => now);
        const server = (await boot([LockController])).getHttpServer();
        await request(server).get('/lock/progressive').expect(200);
        await request(server).get('/lock/progressive').expect(429);
        let blocked = await request(server).get('/lock/progressive').expect(429);
        expect(blocked.headers['retry-after']).toBe('60');
        now += 61_000;
        await request(server).get('/lock/progressive').expect(200);
        await request(server).get('/lock/progressive').expect(429);
        blocked = await request(server).get('/lock/progressive').expect(429);
        expect(blocked.headers['retry-after']).toBe('120');
        expect(blocked.body.blocked).toBe(true);
      });

      it('block and unblock from the service', async () => {
        const server = (await boot([LockController])).getHttpServer();
        await request(server).post('/lock/ban').expect(201);
        const blocked = await request(server).get('/lock').expect(429);
        expect(blocked.headers['retry-after']).toBe('300');
        expect(blocked.body.blocked).toBe(true);
        await request(server).post('/lock/unban').expect(201);
        await request(server).get('/lock').expect(200);
      });
    });

    describe('policies chosen per request', () => {
      it('a plan change moves the key to the new plan, one limiter per plan', async () => {
        const app = await boot([PlansController]);
        const server = app.getHttpServer();
        const limiters = app.get(RateLimitService).limiters;
        const free = () => request(server).get('/plans').set('x-client', 'a');
        await free().expect(200);
        await free().expect(200);
        await free().expect(429);
        const pro = await request(server).get('/plans').set('x-client', 'a').set('x-plan', 'pro');
        expect(pro.status).toBe(200);
        expect(pro.headers.ratelimit).toBe('"plan-pro";r=4;t=50');
        const built = limiters.length;
        for (const plan of ['free', 'pro', 'free', 'pro']) {
          await request(server).get('/plans').set('x-client', 'b').set('x-plan', plan);
        }
        expect(limiters.length).toBe(built);
      });

      it('sets that differ only in a lockout do not share a limiter', async () => {
        const server = (await boot([StrictnessController])).getHttpServer();
        const get = (client: string, plan: string) =>
          request(server).get('/strictness').set('x-client', client).set('x-plan', plan);
        await get('a', 'lax').expect(200);
        await get('b', 'strict').expect(200);
        await get('b', 'strict').expect(429);
        const blocked = await get('b', 'strict').expect(429);
        expect(blocked.body.blocked).toBe(true);
      });

      it('a module-level policy function applies to every guarded route', async () => {
        const server = (
          await boot([PlainController], { policies: planPolicy, key: clientKey })
        ).getHttpServer();
        for (let i = 0; i < 2; i++) {
          await request(server).get('/plain').set('x-client', 'a').expect(200);
        }
        await request(server).get('/plain').set('x-client', 'a').expect(429);
        await request(server).get('/plain').set('x-client', 'a').set('x-plan', 'pro').expect(200);
      });

      it('a function that answers no policy is a 500 naming the option', async () => {
        const server = (
          await boot([PlainController], { policies: () => [] as never, key: clientKey })
        ).getHttpServer();
        await request(server).get('/plain').set('x-client', 'a').expect(500);
      });
    });

    describe('shadow', () => {
      it('counts, never refuses, sends no headers, and hands the decision on', async () => {
        const seen: Decision[] = [];
        const server = (
          await boot([ShadowController], { hooks: { onDecision: (d: Decision) => seen.push(d) } })
        ).getHttpServer();
        const first = await request(server).get('/shadow').expect(200);
        expect(first.body).toEqual({ allowed: true, shadow: true, policy: 'trial' });
        expect(first.headers.ratelimit).toBeUndefined();
        for (let i = 0; i < 2; i++) {
          const res = await request(server).get('/shadow').expect(200);
          expect(res.body).toEqual({ allowed: false, shadow: true, policy: 'trial' });
          expect(res.headers.ratelimit).toBeUndefined();
        }
        expect(seen.map((d) => [d.allowed, (d as RateLimitDecisionView).shadow])).toEqual([
          [true, true],
          [false, true],
          [false, true],
        ]);
        // The enforced route beside it still refuses.
        await request(server).get('/shadow/enforced').expect(200);
        await request(server).get('/shadow/enforced').expect(429);
      });

      it('module-level shadow covers the module policies; headers only when asked', async () => {
        const server = (
          await boot([PlainController], {
            shadow: true,
            policies: fixedWindow({ limit: 1, window: '1m', name: 'api' }),
            headers: true,
          })
        ).getHttpServer();
        await request(server).get('/plain').expect(200, { allowed: true, shadow: true });
        const over = await request(server).get('/plain').expect(200);
        expect(over.body).toEqual({ allowed: false, shadow: true });
        expect(over.headers.ratelimit).toBe('"api";r=0;t=50');
      });
    });

    describe('allow and deny lists', () => {
      const from = (server: unknown, ip: string) =>
        request(server as never)
          .get('/plain')
          .set('X-Forwarded-For', ip);
      const listed = (options: object) =>
        platform.boot(
          {
            imports: [
              RateLimitModule.forRoot({
                store: s,
                global: true,
                policies: fixedWindow({ limit: 1, window: '1m', name: 'api' }),
                ...options,
              }),
            ],
            controllers: [PlainController],
          },
          { trustProxy: true },
        );

      it('allow skips IPv4 and IPv6 CIDRs (mapped addresses folded), no headers', async () => {
        const server = (
          await listed({ allow: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'] })
        ).getHttpServer();
        for (const ip of ['10.1.2.3', '::ffff:10.9.9.9', '2001:db8::5', '192.0.2.7']) {
          for (let i = 0; i < 2; i++) {
            const res = await from(server, ip).expect(200);
            expect(res.headers.ratelimit).toBeUndefined();
          }
        }
        await from(server, '198.51.100.1').expect(200);
        await from(server, '198.51.100.1').expect(429);
      });

      it('deny answers 403 with a problem body and never reaches the store', async () => {
        const server = (
          await listed({ deny: ['203.0.113.0/24', '2001:db8:bad::/48'], allow: ['203.0.113.9'] })
        ).getHttpServer();
        for (const ip of ['203.0.113.9', '2001:db8:bad::1']) {
          const res = await from(server, ip).expect(403);
          expect(res.body).toMatchObject({
            type: 'tag:floodgate.dev,2026:problem:access-denied',
            status: 403,
          });
        }
        if (store.name === 'redis') expect(await redisKeys()).toEqual([]);
        await from(server, '198.51.100.1').expect(200);
      });

      it('predicates of the ExecutionContext', async () => {
        const header = (name: string) => (context: ExecutionContext) =>
          context.switchToHttp().getRequest().headers[name] === '1';
        const server = (
          await listed({ allow: header('x-internal'), deny: header('x-banned') })
        ).getHttpServer();
        await from(server, '198.51.100.1').set('x-banned', '1').expect(403);
        for (let i = 0; i < 3; i++) {
          await from(server, '198.51.100.1').set('x-internal', '1').expect(200);
        }
        await from(server, '198.51.100.1').expect(200);
        await from(server, '198.51.100.1').expect(429);
      });

      it('per limit in @RateLimit: allow skips that limit only, deny refuses', async () => {
        const app = await platform.boot(
          {
            imports: [RateLimitModule.forRoot({ store: s, global: true })],
            controllers: [OfficeController],
          },
          { trustProxy: true },
        );
        const get = (ip: string) =>
          request(app.getHttpServer()).get('/office').set('X-Forwarded-For', ip);
        for (let i = 0; i < 3; i++) {
          const res = await get('10.1.1.1').expect(200);
          expect(res.headers['ratelimit-policy']).toBe('"everyone";q=3;w=60');
        }
        expect((await get('10.1.1.1').expect(429)).body.policy).toBe('everyone');
        await get('198.51.100.1').expect(200);
        expect((await get('198.51.100.1').expect(429)).body.policy).toBe('outside');
        await get('198.51.100.2').set('x-banned', '1').expect(403);
      });

      it('a malformed entry fails at bootstrap, naming it', async () => {
        await expect(listed({ deny: ['10.0.0.0/8', '10.0.0.300'] })).rejects.toThrow(
          /RateLimitModule\.forRoot\.deny\[1\]/,
        );
      });
    });

    describe('resets', () => {
      it('reset(context) from a guard before the limiter lifts the limit', async () => {
        const server = (
          await boot([ResetController], {}, [{ provide: APP_GUARD, useClass: CaptchaGuard }])
        ).getHttpServer();
        await request(server).get('/reset').expect(200);
        await request(server).get('/reset').expect(429);
        await request(server).get('/reset').set('x-captcha', 'solved').expect(200);
        await request(server).get('/reset').expect(429);
      });

      it('reset(request, { policy }) resets that policy set only', async () => {
        const server = (await boot([ResetController])).getHttpServer();
        const login = (client: string, result?: string) =>
          request(server)
            .post('/reset/login')
            .set('x-client', client)
            .set('x-result', result ?? 'ok');
        await login('alice').expect(201);
        // The per-user budget is back; the per-IP one is not.
        const again = await login('alice').expect(201);
        expect(again.headers.ratelimit).toBe('"per-ip";r=1;t=50, "per-user";r=0;t=50');
        await login('alice', 'fail').expect(401);
        await login('alice').expect(429);
      });

      it('reset clears the denied-key cache entry', async () => {
        const server = (
          await boot([ResetController], { deniedCache: true }, [
            { provide: APP_GUARD, useClass: CaptchaGuard },
          ])
        ).getHttpServer();
        await request(server).get('/reset').expect(200);
        await request(server).get('/reset').expect(429);
        await request(server).get('/reset').expect(429);
        await request(server).get('/reset').set('x-captcha', 'solved').expect(200);
      });
    });
  },
);
