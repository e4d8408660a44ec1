/**
 * `loadShedder(...)` of @floodgate/fastify through a real server: the load-shedder table every
 * adapter runs (packages/core/test/http/load-shedder-table.ts), and its option errors.
 */
import * as fastifyShedder from '@floodgate/fastify';
import {
  configErrorOf,
  criticalityOf,
  describeLoadShedder,
  held,
  type ServeShedder,
} from '@floodgate/http-test-kit';
import Fastify from 'fastify';

const serveFastify: ServeShedder = async (limiter) => {
  const app = Fastify();
  await app.register(fastifyShedder.loadShedder, {
    limiter,
    criticality: (req) => criticalityOf(req.headers['x-criticality']),
  });
  app.get('/hold', (_req, reply) => {
    held.push(() => reply.send('done'));
    return reply;
  });
  app.get('/fast', async () => 'ok');
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { server: app.server, close: () => app.close() };
};

describeLoadShedder('fastify', serveFastify);

it('refuses a bad criticality at construction, naming the field', () => {
  expect(
    configErrorOf(() => fastifyShedder.loadShedderHook({ criticality: 'urgent' as never })).field,
  ).toBe('loadShedder.criticality');
});
