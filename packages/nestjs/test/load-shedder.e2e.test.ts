/**
 * LoadShedderGuard (`loadShedder(...)`) on Nest's Express and Fastify platforms, through the
 * load-shedder table every adapter runs (packages/core/test/http/load-shedder-table.ts).
 */
import 'reflect-metadata';
import type { IncomingMessage, Server } from 'node:http';
import {
  configErrorOf,
  criticalityOf,
  describeLoadShedder,
  held,
  type ServeShedder,
} from '@floodgate/http-test-kit';
import { loadShedder } from '@floodgate/nestjs';
import { Controller, Get, Res } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';

@Controller()
class HoldController {
  @Get('hold')
  hold(@Res() res: { send?: (body: string) => void; end: (body: string) => void }) {
    held.push(() => (res.send ? res.send('done') : res.end('done')));
  }
  @Get('fast')
  fast() {
    return 'ok';
  }
}

const serveNest =
  (platform: 'express' | 'fastify'): ServeShedder =>
  async (limiter) => {
    const moduleRef = await Test.createTestingModule({ controllers: [HoldController] }).compile();
    const app = moduleRef.createNestApplication(
      platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(),
      { logger: false },
    );
    app.useGlobalGuards(
      loadShedder({
        limiter,
        criticality: (req) => criticalityOf((req as IncomingMessage).headers['x-criticality']),
      }),
    );
    await app.listen(0, '127.0.0.1');
    return { server: app.getHttpServer() as Server, close: () => app.close() };
  };

describeLoadShedder('nest (express)', serveNest('express'));
describeLoadShedder('nest (fastify)', serveNest('fastify'));

it('refuses a bad criticality at construction', () => {
  expect(configErrorOf(() => loadShedder({ criticality: 'urgent' as never })).field).toBe(
    'loadShedder.criticality',
  );
});
