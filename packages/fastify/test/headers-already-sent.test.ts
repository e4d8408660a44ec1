/** A limiter after a hook that streamed early (test/harness/headers-already-sent.ts). */
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@floodgate/fastify';
import Fastify from 'fastify';
import {
  describeHeadersAlreadySent,
  type EarlyApp,
  earlyLimiterOptions,
  type Seen,
} from '../../../test/harness/headers-already-sent';

async function serve(seen: Seen): Promise<EarlyApp> {
  const app = Fastify();
  app.setErrorHandler((error, _request, reply) => {
    seen.errors.push(error);
    reply.hijack();
    reply.raw.end('error');
  });
  app.addHook('onRequest', async (_request, reply) => {
    reply.raw.writeHead(200, { 'Content-Type': 'text/plain' });
    reply.raw.write('early;');
  });
  await app.register(rateLimit, earlyLimiterOptions());
  app.get('/', async (_request, reply) => {
    seen.handled++;
    reply.hijack();
    reply.raw.end('handler');
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}

describeHeadersAlreadySent('fastify', serve);
