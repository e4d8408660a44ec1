/**
 * Bad configuration stops the application at bootstrap with a RateLimitConfigError that names
 * the controller, the handler and the field — never a 500 on the first request.
 */
import 'reflect-metadata';
import { fixedWindow, memoryStore, RateLimitConfigError, slidingLog } from '@floodgate/core';
import { RateLimit, RateLimitGuard, RateLimitModule, SkipRateLimit } from '@floodgate/nestjs';
import { Controller, Get, type ModuleMetadata, type Type, UseGuards } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { closeApps } from './app.js';

afterEach(closeApps);

async function bootstrap(metadata: ModuleMetadata): Promise<void> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  try {
    await app.init();
  } finally {
    await app.close();
  }
}

/** A controller with one GET handler `list`, decorated with `handler` (and `cls` on the class). */
function controllerWith(name: string, handler: unknown, cls?: unknown): Type {
  @Controller(name.toLowerCase())
  class Decorated {
    @Get()
    list() {
      return [];
    }
  }
  Object.defineProperty(Decorated, 'name', { value: name });
  if (cls !== undefined) RateLimit(cls as never)(Decorated);
  if (handler !== undefined) {
    const descriptor = Object.getOwnPropertyDescriptor(Decorated.prototype, 'list')!;
    RateLimit(handler as never)(Decorated.prototype, 'list', descriptor);
  }
  return Decorated;
}

async function configErrorOf(metadata: ModuleMetadata): Promise<RateLimitConfigError> {
  const error = await bootstrap(metadata).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RateLimitConfigError);
  return error as RateLimitConfigError;
}

/** `[options, code, field]` rows as `[code, field, options]`, so test names skip the options. */
function labelled(rows: [unknown, string, string][]): [string, string, unknown][] {
  return rows.map(([options, code, field]) => [code, field, options]);
}

const withModule = (...controllers: Type[]): ModuleMetadata => ({
  imports: [RateLimitModule.forRoot({ store: memoryStore(), global: true })],
  controllers,
});

describe('invalid @RateLimit options fail at bootstrap', () => {
  it.each(
    labelled([
      [{ limit: 1.5, window: '1m' }, 'FLOODGATE_INVALID_OPTION', '.limit'],
      [{ limit: 10, window: '1 minute' }, 'FLOODGATE_INVALID_OPTION', '.window'],
      [{ limit: 10 }, 'FLOODGATE_MISSING_OPTION', '.window'],
      [{ limit: 10, window: '1m', burst: 5 }, 'FLOODGATE_UNKNOWN_OPTION', '.burst'],
      [{ limit: 10, window: '1m', anchor: 'first' }, 'FLOODGATE_INVALID_OPTION', '.anchor'],
      [
        { anchor: 'first-request', policies: [fixedWindow({ limit: 1, window: '1s' })] },
        'FLOODGATE_INVALID_OPTION',
        '.anchor',
      ],
      [{}, 'FLOODGATE_NO_POLICIES', '.limit'],
      [
        { limit: 10, window: '1m', policies: [fixedWindow({ limit: 1, window: '1s' })] },
        'FLOODGATE_INVALID_OPTION',
        '.limit',
      ],
      [
        {
          policies: [
            fixedWindow({ limit: 1, window: '1s', name: 'burst' }),
            fixedWindow({ limit: 5, window: '1m', name: 'burst' }),
          ],
        },
        'FLOODGATE_DUPLICATE_POLICY',
        '.policies[1].name',
      ],
      [{ policies: [{ limit: 5 }] }, 'FLOODGATE_INVALID_OPTION', '.policies[0]'],
      [{ limit: 1, window: '1m', key: 'email' }, 'FLOODGATE_INVALID_OPTION', '.key'],
      [{ limit: 1, window: '1m', key: ['clientId', 7] }, 'FLOODGATE_INVALID_OPTION', '.key[1]'],
      [{ limit: 1, window: '1m', cost: -1 }, 'FLOODGATE_INVALID_OPTION', '.cost'],
      [
        { limit: 1, window: '1m', cost: { estimate: 1, actual: 7 } },
        'FLOODGATE_INVALID_OPTION',
        '.cost.actual',
      ],
      [
        { limit: 1, window: '1m', count: 'failed', cost: { estimate: 1, actual: 'x-used' } },
        'FLOODGATE_INVALID_OPTION',
        '.count',
      ],
      [
        {
          policies: slidingLog({ limit: 1, window: '1m' }),
          cost: { estimate: 1, actual: 'x-used' },
        },
        'FLOODGATE_INVALID_OPTION',
        '.policies[0]',
      ],
      [{ limit: 1, window: '1m', scope: 'app' }, 'FLOODGATE_INVALID_OPTION', '.scope'],
      [{ limit: 1, window: '1m', override: 'yes' }, 'FLOODGATE_INVALID_OPTION', '.override'],
      [{ limit: 1, window: '1m', count: 'errors' }, 'FLOODGATE_INVALID_OPTION', '.count'],
      [{ limit: 1, window: '1m', shadow: 'yes' }, 'FLOODGATE_INVALID_OPTION', '.shadow'],
      [
        { limit: 1, window: '1m', blockDuration: '1 week' },
        'FLOODGATE_INVALID_OPTION',
        '.blockDuration',
      ],
      [{ limit: 1, window: '1m', allow: ['10.0.0.300'] }, 'FLOODGATE_INVALID_OPTION', '.allow[0]'],
      [{ limit: 1, window: '1m', deny: 'all' }, 'FLOODGATE_INVALID_OPTION', '.deny'],
      [[], 'FLOODGATE_NO_POLICIES', '[0]'],
      [
        [
          { limit: 1, window: '1m' },
          { limit: 2, window: '1m', cost: 2 },
        ],
        'FLOODGATE_INVALID_OPTION',
        '[1].cost',
      ],
      [
        [
          { limit: 1, window: '1m' },
          { limit: -1, window: '1m' },
        ],
        'FLOODGATE_INVALID_OPTION',
        '[1].limit',
      ],
    ]),
  )('%s at %s', async (code, field, options) => {
    const error = await configErrorOf(withModule(controllerWith('DevicesController', options)));
    expect(error.code).toBe(code);
    expect(error.field).toBe(`@RateLimit(DevicesController.list)${field}`);
    expect(error.message).toContain('DevicesController.list');
  });

  it('names the controller when the class decorator is wrong', async () => {
    const error = await configErrorOf(
      withModule(controllerWith('FleetController', undefined, { limit: -5, window: '1m' })),
    );
    expect(error.field).toBe('@RateLimit(FleetController).limit');
    expect(error.message).toMatch(
      /^@RateLimit\(FleetController\)\.limit must be a non-negative integer, got -5/,
    );
  });

  it('checks a class decorator even when every handler overrides it', async () => {
    const error = await configErrorOf(
      withModule(controllerWith('FleetController', { limit: 1, window: '1s' }, { window: '1m' })),
    );
    expect(error.field).toBe('@RateLimit(FleetController).limit');
  });

  it('checks decorators on routes that no guard covers (global: false)', async () => {
    const error = await configErrorOf({
      imports: [RateLimitModule.forRoot({ store: memoryStore() })],
      controllers: [controllerWith('DevicesController', { limit: 1.5, window: '1m' })],
    });
    expect(error.field).toBe('@RateLimit(DevicesController.list).limit');
  });
});

describe('the { limit, window } shorthand', () => {
  it("passes anchor to fixedWindow: with 'first-request' the window runs from the first request", async () => {
    let now = Date.UTC(2030, 0, 1, 12, 0, 30);
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({ store: memoryStore({ clock: () => now }), global: true }),
      ],
      controllers: [
        controllerWith('ReportsController', {
          limit: 1,
          window: '1m',
          anchor: 'first-request',
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
    await app.init();
    try {
      const first = await request(app.getHttpServer()).get('/reportscontroller').expect(200);
      expect(first.headers['ratelimit-policy']).toContain('fixed-1-per-60s-first-request');
      // 12:01:10: an aligned window would have started again at 12:01:00.
      now += 40_000;
      const denied = await request(app.getHttpServer()).get('/reportscontroller').expect(429);
      expect(denied.headers['retry-after']).toBe('20');
    } finally {
      await app.close();
    }
  });
});

describe('invalid module options fail at bootstrap', () => {
  it.each(
    labelled([
      [{ store: {} }, 'FLOODGATE_INVALID_OPTION', 'RateLimitModule.forRoot.store'],
      [{ scope: 'api' }, 'FLOODGATE_INVALID_OPTION', 'RateLimitModule.forRoot.scope'],
      [{ skip: true }, 'FLOODGATE_INVALID_OPTION', 'RateLimitModule.forRoot.skip'],
      [{ errorMessage: '' }, 'FLOODGATE_INVALID_OPTION', 'RateLimitModule.forRoot.errorMessage'],
      [{ count: 'errors' }, 'FLOODGATE_INVALID_OPTION', 'RateLimitModule.forRoot.count'],
      [{ shadow: 1 }, 'FLOODGATE_INVALID_OPTION', 'RateLimitModule.forRoot.shadow'],
      [{ allow: ['300.0.0.0/8'] }, 'FLOODGATE_INVALID_OPTION', 'RateLimitModule.forRoot.allow[0]'],
      [
        { onMissingPrincipal: 'ip' },
        'FLOODGATE_INVALID_OPTION',
        'RateLimitModule.forRoot.onMissingPrincipal',
      ],
      [
        { store: memoryStore(), polices: [] },
        'FLOODGATE_UNKNOWN_OPTION',
        'RateLimitModule.forRoot.polices',
      ],
      [
        { store: memoryStore(), prefix: 'a{b' },
        'FLOODGATE_INVALID_OPTION',
        'RateLimitModule.forRoot.prefix',
      ],
      [
        { store: memoryStore(), policies: [] },
        'FLOODGATE_NO_POLICIES',
        'RateLimitModule.forRoot.policies',
      ],
      [
        { store: memoryStore(), key: 'user' },
        'FLOODGATE_INVALID_OPTION',
        'RateLimitModule.forRoot.key',
      ],
      [
        { store: memoryStore(), headers: { rfc: true } },
        'FLOODGATE_UNKNOWN_OPTION',
        'RateLimitModule.forRoot.headers.rfc',
      ],
      [
        { store: memoryStore(), timeout: 'soon' },
        'FLOODGATE_INVALID_OPTION',
        'RateLimitModule.forRoot.timeout',
      ],
      [
        { store: memoryStore(), ...JSON.parse('{"__proto__": {"skip": true}}') },
        'FLOODGATE_UNKNOWN_OPTION',
        'RateLimitModule.forRoot.__proto__',
      ],
      [
        { store: memoryStore(), appKeyHeader: 'x app key' },
        'FLOODGATE_INVALID_OPTION',
        'RateLimitModule.forRoot.appKeyHeader',
      ],
    ]),
  )('%s at %s', async (code, field, options) => {
    const error = await configErrorOf({
      imports: [RateLimitModule.forRoot(options as never)],
    });
    expect(error.code).toBe(code);
    expect(error.field).toBe(field);
  });

  it('reads own properties only: a polluted Object.prototype configures nothing', async () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto.errorMessage = '';
    proto.policies = [];
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ store: memoryStore() })],
      }).compile();
      await moduleRef.close();
    } finally {
      delete proto.errorMessage;
      delete proto.policies;
    }
  });

  it('reads `global` and `mode` when forRoot is called', () => {
    expect(() => RateLimitModule.forRoot({ mode: 'pipe' as never })).toThrow(
      expect.objectContaining({ field: 'RateLimitModule.forRoot.mode' }),
    );
    expect(() => RateLimitModule.forRoot({ store: memoryStore(), global: 'yes' as never })).toThrow(
      expect.objectContaining({ field: 'RateLimitModule.forRoot.global' }),
    );
  });

  it('forRootAsync takes exactly one of useFactory, useClass, useExisting', () => {
    expect(() => RateLimitModule.forRootAsync({})).toThrow(
      expect.objectContaining({ code: 'FLOODGATE_MISSING_OPTION' }),
    );
    class Settings {
      createRateLimitOptions() {
        return { store: memoryStore() };
      }
    }
    expect(() =>
      RateLimitModule.forRootAsync({ useClass: Settings, useExisting: Settings }),
    ).toThrow(expect.objectContaining({ field: 'RateLimitModule.forRootAsync.useExisting' }));
  });

  it("reports a bad factory result under forRootAsync's name", async () => {
    const error = await configErrorOf({
      imports: [
        RateLimitModule.forRootAsync({
          useFactory: () => ({ store: memoryStore(), global: true }) as never,
        }),
      ],
    });
    expect(error.field).toBe('RateLimitModule.forRootAsync useFactory.global');
    expect(error.message).toContain('pass global to RateLimitModule.forRootAsync');
  });
});

describe('@SkipRateLimit(name)', () => {
  const controllerSkipping = (...names: string[]) => {
    @Controller('skipping')
    @RateLimit({ policies: [fixedWindow({ limit: 5, window: '1s', name: 'burst' })] })
    class SkippingController {
      @Get()
      @SkipRateLimit(...(names as [string]))
      list() {
        return [];
      }
    }
    return SkippingController;
  };
  const moduleWithDaily = RateLimitModule.forRoot({
    store: memoryStore(),
    global: true,
    policies: fixedWindow({ limit: 100, window: '1d', name: 'daily' }),
  });

  it('fails bootstrap when no policy of the handler has that name', async () => {
    const error = await configErrorOf({
      imports: [moduleWithDaily],
      controllers: [controllerSkipping('burst', 'short')],
    });
    expect(error.code).toBe('FLOODGATE_INVALID_OPTION');
    expect(error.field).toBe('@SkipRateLimit(SkippingController.list)[1]');
    expect(error.message).toContain('"short" is not the name of a policy that applies here');
    expect(error.message).toContain('"daily", "burst"');
  });

  it("rejects @nestjs/throttler's object form, which used to skip nothing", async () => {
    const error = await configErrorOf({
      imports: [moduleWithDaily],
      controllers: [controllerSkipping({ short: true } as never)],
    });
    expect(error.field).toBe('@SkipRateLimit(SkippingController.list)');
  });

  it('accepts the names of module and handler policies', async () => {
    await bootstrap({ imports: [moduleWithDaily], controllers: [controllerSkipping('daily')] });
    await bootstrap({ imports: [moduleWithDaily], controllers: [controllerSkipping('burst')] });
  });
});

describe('RateLimitModule.forRoot() without a store', () => {
  it('uses memoryStore() and warns once', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    // Fresh copies of the package (and Nest): other tests here may have warned already.
    let fresh!: {
      nest: typeof import('@floodgate/nestjs');
      testing: typeof import('@nestjs/testing');
    };
    jest.isolateModules(() => {
      fresh = { nest: require('@floodgate/nestjs'), testing: require('@nestjs/testing') };
    });
    const { RateLimitModule, RateLimitStore } = fresh.nest;
    const { Test } = fresh.testing;
    try {
      for (let i = 0; i < 2; i++) {
        const moduleRef = await Test.createTestingModule({
          imports: [RateLimitModule.forRoot()],
        }).compile();
        expect(moduleRef.get(RateLimitStore)).toMatchObject({ prepare: expect.any(Function) });
        await moduleRef.close();
      }
      const calls = warn.mock.calls.filter(
        ([, options]) => (options as { code?: string })?.code === 'FLOODGATE_DEFAULT_MEMORY_STORE',
      );
      expect(calls).toHaveLength(1);
      expect(String(calls[0]![0])).toContain('redisStore({ client })');
    } finally {
      warn.mockRestore();
    }
  });
});

describe('a missing RateLimitModule', () => {
  it('is reported by name when a controller uses RateLimitGuard', async () => {
    @Controller('devices')
    @UseGuards(RateLimitGuard)
    class DevicesController {
      @Get()
      list() {
        return [];
      }
    }
    const error = await bootstrap({ controllers: [DevicesController] }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect(error!.message).toMatch(
      /RateLimitGuard needs RateLimitModule: add RateLimitModule\.forRoot/,
    );
  });
});

describe('a @RateLimit that no guard covers', () => {
  async function warningsOf(metadata: ModuleMetadata): Promise<string[]> {
    const warnings: string[] = [];
    const logger = {
      log() {},
      error() {},
      warn: (message: unknown) => void warnings.push(String(message)),
    };
    const moduleRef = await Test.createTestingModule(metadata).compile();
    const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger });
    await app.init();
    await app.close();
    return warnings;
  }

  const decorated = () => controllerWith('DevicesController', { limit: 1, window: '1m' });

  it('is reported at bootstrap', async () => {
    const warnings = await warningsOf({
      imports: [RateLimitModule.forRoot({ store: memoryStore() })],
      controllers: [decorated()],
    });
    expect(warnings).toEqual([
      expect.stringContaining('@RateLimit on DevicesController.list has no RateLimitGuard'),
    ]);
  });

  it('is not reported with global: true, an APP_GUARD or @UseGuards', async () => {
    class TenantGuard extends RateLimitGuard {}
    @Controller('guarded')
    @UseGuards(TenantGuard)
    @RateLimit({ limit: 1, window: '1m' })
    class GuardedController {
      @Get()
      list() {
        return [];
      }
    }
    for (const metadata of [
      {
        imports: [RateLimitModule.forRoot({ store: memoryStore(), global: true })],
        controllers: [decorated()],
      },
      {
        imports: [RateLimitModule.forRoot({ store: memoryStore() })],
        controllers: [decorated()],
        providers: [{ provide: APP_GUARD, useClass: TenantGuard }],
      },
      {
        imports: [RateLimitModule.forRoot({ store: memoryStore() })],
        controllers: [GuardedController],
      },
    ]) {
      expect(await warningsOf(metadata)).toEqual([]);
    }
  });
});
