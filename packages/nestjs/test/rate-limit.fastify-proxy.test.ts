/**
 * NestJS on Fastify with a `trustProxy` that believes every hop: any client writes its own
 * address in X-Forwarded-For, so the guard reports FLOODGATE_PROXY_HOPS once, as it does on
 * Express with `trust proxy: true`, for keys and for the allowlist; trusting only the proxy's
 * address is silent.
 */
import 'reflect-metadata';
import { fixedWindow, memoryStore } from '@floodgate/core';
import { RateLimitModule } from '@floodgate/nestjs';
import type { INestApplication } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { PlainController } from './app.js';

type TrustProxy = ConstructorParameters<typeof FastifyAdapter>[0] extends infer O
  ? O extends { trustProxy?: infer T }
    ? T
    : never
  : never;

let app: INestApplication | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function bootFastify(trustProxy: TrustProxy, module: Record<string, unknown>) {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RateLimitModule.forRoot({
        store: memoryStore({ clock: () => 1_700_000_010_000 }),
        global: true,
        // Each test boots a new app after requests: not the mistake that code reports.
        validate: { FLOODGATE_LIMITER_PER_REQUEST: false },
        ...module,
      } as never),
    ],
    controllers: [PlainController],
  }).compile();
  const nest = moduleRef.createNestApplication<NestFastifyApplication>(
    new FastifyAdapter({ trustProxy }),
    { logger: false },
  );
  app = nest;
  await nest.init();
  await nest.getHttpAdapter().getInstance().ready();
  return nest;
}

/** FLOODGATE_ warning codes given while `run` ran, and what it returned. */
async function warningsDuring<T>(run: () => Promise<T>): Promise<{ codes: string[]; result: T }> {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    const result = await run();
    const codes = spy.mock.calls
      .map((call) => (call[1] as { code?: string } | undefined)?.code ?? '')
      .filter((code) => code.startsWith('FLOODGATE_'));
    return { codes, result };
  } finally {
    spy.mockRestore();
  }
}

const inject = (nest: NestFastifyApplication, remoteAddress: string, forwardedFor: string) =>
  nest.inject({ url: '/plain', remoteAddress, headers: { 'x-forwarded-for': forwardedFor } });

describe.each([
  ['trustProxy: true', true],
  ['a trust function that trusts any address', () => true],
] as const)('@floodgate/nestjs on Fastify with %s', (_name, trustProxy) => {
  it('warns FLOODGATE_PROXY_HOPS once: each forged X-Forwarded-For gets a fresh budget', async () => {
    const nest = await bootFastify(trustProxy, {
      policies: fixedWindow({ limit: 2, window: '1m', name: 'api' }),
    });
    const { codes, result } = await warningsDuring(async () => {
      const statuses: number[] = [];
      for (let i = 1; i <= 6; i++) {
        statuses.push((await inject(nest, '198.51.100.9', `203.0.113.${i}`)).statusCode);
      }
      return statuses;
    });
    expect(result).toEqual(Array(6).fill(200));
    expect(codes).toEqual(['FLOODGATE_PROXY_HOPS']);
  });

  it('warns FLOODGATE_PROXY_HOPS when a forged X-Forwarded-For meets the allowlist', async () => {
    const nest = await bootFastify(trustProxy, {
      allow: ['10.0.0.0/8'],
      policies: fixedWindow({ limit: 1, window: '1m', name: 'api' }),
    });
    const { codes } = await warningsDuring(async () => {
      for (let i = 0; i < 3; i++) await inject(nest, '198.51.100.9', '10.0.0.1');
    });
    expect(codes).toEqual(['FLOODGATE_PROXY_HOPS']);
  });
});

it('@floodgate/nestjs on Fastify trusting only the proxy address: silent, one budget per client', async () => {
  const nest = await bootFastify('127.0.0.1', {
    policies: fixedWindow({ limit: 1, window: '1m', name: 'api' }),
  });
  const { codes, result } = await warningsDuring(async () => [
    (await inject(nest, '127.0.0.1', '198.51.100.1')).statusCode,
    (await inject(nest, '127.0.0.1', '198.51.100.1')).statusCode,
    (await inject(nest, '127.0.0.1', '198.51.100.2')).statusCode,
  ]);
  expect(result).toEqual([200, 429, 200]);
  expect(codes).toEqual([]);
});
