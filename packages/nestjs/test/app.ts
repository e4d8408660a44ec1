/**
 * The controllers, guards and helpers the e2e suite boots, on either platform and either store.
 */
import 'reflect-metadata';
import type { Decision, Store } from '@floodgate/core';
import { fixedWindow, memoryStore, redisStore } from '@floodgate/core';
import {
  RateLimit,
  RateLimitDecision,
  RateLimitException,
  RateLimitGuard,
  RateLimitModule,
  SkipRateLimit,
} from '@floodgate/nestjs';
import {
  type ArgumentsHost,
  type CanActivate,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  Get,
  type INestApplication,
  Injectable,
  type ModuleMetadata,
  Param,
  Post,
  UseGuards,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../test/harness/redis.js';

/** Every test runs at this instant: fixed windows never roll over mid-test. */
export const NOW = Date.UTC(2030, 0, 1, 12, 0, 10);
export const clock = (): number => NOW;

export interface Platform {
  readonly name: 'express' | 'fastify';
  /** Compiles, creates and initialises an app; `trustProxy` trusts X-Forwarded-For. */
  boot(metadata: ModuleMetadata, options?: { trustProxy?: boolean }): Promise<INestApplication>;
}

const apps: INestApplication[] = [];

async function boot(
  name: Platform['name'],
  metadata: ModuleMetadata,
  { trustProxy = false } = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app = moduleRef.createNestApplication(
    name === 'express' ? new ExpressAdapter() : new FastifyAdapter({ trustProxy }),
    { logger: false },
  );
  if (name === 'express') app.getHttpAdapter().getInstance().set('trust proxy', trustProxy);
  apps.push(app);
  await app.init();
  if (name === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return app;
}

export const PLATFORMS: readonly Platform[] = [
  { name: 'express', boot: (m, o) => boot('express', m, o) },
  { name: 'fastify', boot: (m, o) => boot('fastify', m, o) },
];

export async function closeApps(): Promise<void> {
  for (const app of apps.splice(0)) await app.close();
}

export interface StoreKind {
  readonly name: 'memory' | 'redis';
  /** A fresh, empty store on the fixed clock (or on `at`). */
  make(at?: () => number): Promise<Store>;
  close(): Promise<void>;
}

let redis: Redis | undefined;

export const STORES: readonly StoreKind[] = [
  {
    name: 'memory',
    make: async (at = clock) => memoryStore({ clock: at }),
    close: async () => {},
  },
  {
    name: 'redis',
    make: async (at = clock) => {
      redis ??= connectIoredis();
      await flushRedis(redis);
      return redisStore({ client: redis, clock: at });
    },
    close: async () => {
      await redis?.quit();
      redis = undefined;
    },
  },
];

/** Every platform with every store: the table the e2e files run over. */
export const CASES: readonly { platform: Platform; store: StoreKind }[] = PLATFORMS.flatMap(
  (platform) => STORES.map((store) => ({ platform, store })),
);

/**
 * `boot(controllers, options, providers)` for a describe block: boots `platform` with
 * RateLimitModule global on the store `store()` answers when called (the test's current store).
 */
export function globalModuleBoot(
  platform: Platform,
  store: () => Store,
): (controllers: unknown[], options?: object, providers?: unknown[]) => Promise<INestApplication> {
  return (controllers, options = {}, providers = []) =>
    platform.boot({
      imports: [RateLimitModule.forRoot({ store: store(), global: true, ...options })],
      controllers: controllers as never[],
      providers: providers as never[],
    });
}

/** All keys in the test Redis database (empty for the memory store). */
export async function redisKeys(): Promise<string[]> {
  return redis ? (await redis.keys('*')).sort() : [];
}

/**
 * Stand-in auth: `Authorization: Bearer <client id>` sets `request.user.clientId` (HTTP and
 * GraphQL).
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    // HTTP: the request; GraphQL: the context's request (Apollo `req`, Mercurius `reply.request`).
    const gql = context.getType<string>() === 'graphql' ? context.getArgByIndex(2) : undefined;
    const request = gql ? (gql.req ?? gql.reply?.request) : context.switchToHttp().getRequest();
    const header = request.headers.authorization;
    if (typeof header === 'string' && header.startsWith('Bearer ')) {
      request.user = { clientId: header.slice('Bearer '.length) };
    }
    return true;
  }
}

export const rebootPolicy = fixedWindow({ limit: 4, window: '1m', name: 'reboots' });

@Controller('devices')
@RateLimit({ limit: 3, window: '1m', key: ['clientId', 'ip'] })
export class DevicesController {
  @Get()
  list(@RateLimitDecision() decision: Decision | undefined) {
    return { remaining: decision?.remaining ?? null };
  }

  @Get(':id')
  @RateLimit({ limit: 1, window: '1m', key: ['clientId', 'ip'], name: 'device-read' })
  get(@Param('id') id: string) {
    return { id };
  }

  @Post(':id/reboot')
  @RateLimit({ policies: [rebootPolicy], key: 'clientId', cost: 2 })
  reboot(@Param('id') id: string) {
    return { rebooted: id };
  }

  @Get('health/live')
  @SkipRateLimit()
  health() {
    return { ok: true };
  }
}

/** Same routes as DevicesController under another class and method names. */
@Controller('devices')
@RateLimit({ limit: 3, window: '1m', key: ['clientId', 'ip'] })
export class RenamedDevicesController {
  @Get()
  index() {
    return { renamed: true };
  }
}

/** A controller that also names the guard itself, for the double-count scenario. */
@Controller('firmware')
@UseGuards(RateLimitGuard)
@RateLimit({ limit: 2, window: '1m' })
export class FirmwareController {
  @Get()
  latest() {
    return { version: '1.2.3' };
  }
}

/** Not decorated: limited only by the module's default policies. */
@Controller('plain')
export class PlainController {
  @Get()
  plain() {
    return { ok: true };
  }
}

/** Sees every RateLimitException and answers with its own body, from the decision. */
@Catch(RateLimitException)
export class RateLimitExceptionSpy implements ExceptionFilter {
  static seen: RateLimitException[] = [];
  constructor(private readonly adapterHost: HttpAdapterHost) {}
  catch(exception: RateLimitException, host: ArgumentsHost): void {
    RateLimitExceptionSpy.seen.push(exception);
    const { httpAdapter } = this.adapterHost;
    httpAdapter.reply(
      host.switchToHttp().getResponse(),
      { error: 'slow down', policy: exception.decision.policy },
      exception.getStatus(),
    );
  }
}
