/**
 * NestJS on Fastify 5.12 and later (what @nestjs/platform-fastify installs) with a numeric
 * `trustProxy`: Fastify ignores it, so every client behind the proxy shares the proxy's address;
 * the guard reports FLOODGATE_UNTRUSTED_PROXY once (its own file: that code is once per process).
 */
import 'reflect-metadata';
import { fixedWindow, memoryStore } from '@floodgate/core';
import { RateLimitModule } from '@floodgate/nestjs';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { PlainController } from './app.js';

it('a hop count on Fastify 5.12+: one budget for every client, reported once', async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RateLimitModule.forRoot({
        store: memoryStore({ clock: () => 1_700_000_010_000 }),
        global: true,
        policies: fixedWindow({ limit: 2, window: '1m', name: 'api' }),
      }),
    ],
    controllers: [PlainController],
  }).compile();
  // Fastify 5.12's types no longer take a number; its runtime accepts one and ignores it.
  const adapter = new FastifyAdapter({ trustProxy: 1 as never });
  const nest = moduleRef.createNestApplication<NestFastifyApplication>(adapter, { logger: false });
  await nest.init();
  await nest.getHttpAdapter().getInstance().ready();
  const [major = 0, minor = 0] = nest.getHttpAdapter().getInstance().version.split('.').map(Number);
  expect(major > 5 || (major === 5 && minor >= 12)).toBe(true);
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    const statuses: number[] = [];
    for (const client of ['198.51.100.1', '198.51.100.1', '198.51.100.2']) {
      const res = await nest.inject({
        url: '/plain',
        remoteAddress: '127.0.0.1',
        headers: { 'x-forwarded-for': client },
      });
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([200, 200, 429]);
    const warnings = spy.mock.calls.filter(([, o]) =>
      String((o as { code?: string } | undefined)?.code).startsWith('FLOODGATE_'),
    );
    expect(warnings.map(([, o]) => (o as { code: string }).code)).toEqual([
      'FLOODGATE_UNTRUSTED_PROXY',
    ]);
    expect(String(warnings[0]![0])).toMatch(/Fastify 5.12 and later ignore a number/);
  } finally {
    spy.mockRestore();
    await nest.close();
  }
});
