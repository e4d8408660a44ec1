/**
 * RateLimitModule: `forRoot({ store, policies?, key?, headers?, global? })` or
 * `forRootAsync({ useFactory | useClass | useExisting, inject, imports, global? })`. The module
 * is global, so `@UseGuards(RateLimitGuard)` works in every module once it is imported.
 */
import { RateLimitConfigError } from '@floodgate/core';
import { configError, optionNames, readOptions } from '@floodgate/core/http';
import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { parseModuleOptions, type RateLimitConfig } from './internal/options.js';
import { RATE_LIMIT_GLOBAL, RATE_LIMIT_OPTIONS, RateLimitStore } from './rate-limit.constants.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitInterceptor } from './rate-limit.interceptor.js';
import type {
  RateLimitModuleAsyncOptions,
  RateLimitModuleOptions,
  RateLimitOptionsFactory,
} from './rate-limit.interfaces.js';
import { RATE_LIMIT_CONFIG, RateLimitService } from './rate-limit.service.js';

/** Every option name of `forRootAsync`, checked against RateLimitModuleAsyncOptions. */
const ASYNC_OPTION_NAMES = optionNames<RateLimitModuleAsyncOptions>({
  imports: true,
  inject: true,
  useFactory: true,
  useClass: true,
  useExisting: true,
  global: true,
  mode: true,
});

/**
 * Rate limiting for a Nest application: `forRoot` (or `forRootAsync`, for options made by a
 * factory) sets the store, default policies and key options; `global: true` guards every
 * route, otherwise put `RateLimitGuard` where you want it.
 *
 * @example
 * ```ts
 * import { fixedWindow, redisStore } from '@floodgate/core';
 * import { RateLimitModule } from '@floodgate/nestjs';
 * import { Redis } from 'ioredis';
 *
 * const rateLimiting = RateLimitModule.forRoot({
 *   store: redisStore({ client: new Redis() }),
 *   policies: fixedWindow({ limit: 100, window: '1m' }), // every route without its own
 *   global: true,
 * });
 * // then: @Module({ imports: [rateLimiting] }) export class AppModule {}
 * ```
 */
@Module({})
// biome-ignore lint/complexity/noStaticOnlyClass: Nest modules are classes with static forRoot().
export class RateLimitModule {
  /** Configures rate limiting with options known up front. */
  static forRoot(options: RateLimitModuleOptions = {}): DynamicModule {
    const where = 'RateLimitModule.forRoot';
    if (options === null || typeof options !== 'object')
      throw configError(where, options, 'an options object');
    const global = readGlobal(options.global, where);
    const mode = readMode(options.mode, where);
    return RateLimitModule.build(
      [
        { provide: RATE_LIMIT_OPTIONS, useValue: options },
        {
          provide: RATE_LIMIT_CONFIG,
          useFactory: (): RateLimitConfig => parseModuleOptions(options, where, true),
        },
      ],
      [],
      global,
      mode,
    );
  }

  /** Configures rate limiting with options made by a factory, a class, or an existing provider. */
  static forRootAsync(options: RateLimitModuleAsyncOptions): DynamicModule {
    const where = 'RateLimitModule.forRootAsync';
    const o = readOptions(options, where, ASYNC_OPTION_NAMES);
    const ways = (['useFactory', 'useClass', 'useExisting'] as const).filter(
      (n) => o[n] !== undefined,
    );
    if (ways.length !== 1) {
      throw new RateLimitConfigError(
        ways.length === 0 ? 'FLOODGATE_MISSING_OPTION' : 'FLOODGATE_INVALID_OPTION',
        `${where}.${ways[1] ?? 'useFactory'}`,
        ways.length === 0 ? undefined : o[ways[1]!],
        `${where} takes exactly one of useFactory, useClass or useExisting` +
          (ways.length === 0 ? '' : `, got ${ways.join(' and ')}`),
      );
    }
    const way = ways[0]!;
    if (typeof o[way] !== 'function')
      throw configError(`${where}.${way}`, o[way], 'a function or a class');
    if (o.inject !== undefined && !Array.isArray(o.inject)) {
      throw configError(`${where}.inject`, o.inject, 'an array of injection tokens');
    }
    const factoryWhere = `${where} ${way}`;
    const providers: Provider[] = [];
    if (options.useFactory) {
      providers.push({
        provide: RATE_LIMIT_OPTIONS,
        useFactory: options.useFactory,
        inject: options.inject ?? [],
      });
    } else {
      const factory = (options.useClass ?? options.useExisting)!;
      if (options.useClass) providers.push({ provide: factory, useClass: factory });
      providers.push({
        provide: RATE_LIMIT_OPTIONS,
        useFactory: (made: RateLimitOptionsFactory) => made.createRateLimitOptions(),
        inject: [factory],
      });
    }
    providers.push({
      provide: RATE_LIMIT_CONFIG,
      useFactory: (made: unknown): RateLimitConfig => parseModuleOptions(made, factoryWhere, false),
      inject: [RATE_LIMIT_OPTIONS],
    });
    return RateLimitModule.build(
      providers,
      options.imports ?? [],
      readGlobal(o.global, where),
      readMode(o.mode, where),
    );
  }

  private static build(
    providers: Provider[],
    imports: NonNullable<DynamicModule['imports']>,
    global: boolean,
    mode: 'guard' | 'interceptor',
  ): DynamicModule {
    return {
      module: RateLimitModule,
      global: true,
      imports: [DiscoveryModule, ...imports],
      providers: [
        ...providers,
        { provide: RATE_LIMIT_GLOBAL, useValue: global },
        RateLimitService,
        RateLimitGuard,
        RateLimitInterceptor,
        {
          provide: RateLimitStore,
          useFactory: (config: RateLimitConfig) => config.store,
          inject: [RATE_LIMIT_CONFIG],
        },
        ...(global
          ? [
              mode === 'guard'
                ? { provide: APP_GUARD, useExisting: RateLimitGuard }
                : { provide: APP_INTERCEPTOR, useExisting: RateLimitInterceptor },
            ]
          : []),
      ],
      exports: [
        RATE_LIMIT_OPTIONS,
        RateLimitStore,
        RateLimitService,
        RateLimitGuard,
        RateLimitInterceptor,
      ],
    };
  }
}

function readGlobal(value: unknown, where: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw configError(`${where}.global`, value, 'a boolean');
  return value;
}

function readMode(value: unknown, where: string): 'guard' | 'interceptor' {
  if (value === undefined) return 'guard';
  if (value !== 'guard' && value !== 'interceptor') {
    throw configError(`${where}.mode`, value, "'guard' or 'interceptor'");
  }
  return value;
}
