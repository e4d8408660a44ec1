/**
 * Test driver: a Fastify app with a stand-in auth hook, the limiters under test (the plugin
 * registered once per limiter), a route that echoes the decision, a route that holds its reply
 * until released, and an error handler that reports the error as JSON. Listens on 127.0.0.1 on
 * a free port. Requests get `get(header)` and `path`, which the shared table's functions use.
 */
import type { AddressInfo } from 'node:net';
import { rateLimit, rateLimitHook } from '@floodgate/fastify';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { MountedLimiter, TestApp, TestAppOptions } from './driver';

/** The app with its routes, not yet listening (for `inject`). */
export async function buildFastify(options: TestAppOptions): Promise<FastifyInstance> {
  // A number is a hop count (the safe setting); `true` trusts every hop.
  const app = Fastify({ trustProxy: options.trustProxy ?? false });
  app.decorateRequest('get', function get(this: FastifyRequest, name: string) {
    const value = this.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : value;
  });
  app.decorateRequest('path', {
    getter(this: FastifyRequest) {
      return this.url.split('?')[0];
    },
  });
  app.addHook('onRequest', async (request) => {
    const token = request.headers.authorization?.replace(/^Bearer /, '');
    if (token) (request as { user?: unknown }).user = { id: token };
  });
  if (options.onMounted) {
    const hooks = options.limiters.map((limiter) => rateLimitHook(limiter as never));
    for (const hook of hooks) app.addHook('onRequest', hook);
    options.onMounted(hooks as unknown as MountedLimiter[]);
  } else {
    for (const limiter of options.limiters) await app.register(rateLimit, limiter as never);
  }
  app.get('/hold', (request, reply) => {
    options.onHold?.(() => reply.send({ rateLimit: request.rateLimit ?? null }), request);
    return reply;
  });
  app.get('/*', async (request, reply) => {
    options.onHandler?.(request);
    // `?status=401`: the status to answer with (for `count`).
    reply.code(Number((request.query as { status?: string }).status) || 200);
    return { rateLimit: request.rateLimit ?? null };
  });
  app.setErrorHandler((error: Error & { argument?: string; code?: string }, _request, reply) => {
    reply.code(500).send({
      error: {
        name: error.name,
        code: error.code,
        argument: error.argument,
        message: error.message,
      },
    });
  });
  return app;
}

/** Serves the app on Fastify 5 (the devDependency `fastify`) on a free port of 127.0.0.1. */
export async function serveFastify(options: TestAppOptions): Promise<TestApp> {
  const app = await buildFastify(options);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const server = app.server;
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await app.close();
    },
  };
}
