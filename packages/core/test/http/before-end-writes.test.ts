/**
 * beforeEnd holds a response until its tasks (count refunds, lease releases) settled, whether
 * the framework sends the body with `end(body)` or writes it first and ends after (Fastify
 * 5.0): the client never has its answer before the tasks are done. Writes made after the
 * tasks settled go through a middleware that wrapped `write` after the limiter (compression).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeEnd } from '@floodgate/core/http';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** Serves `handle`; answers the body a client receives and the events in order. */
async function serve(handle: (res: ServerResponse, events: string[]) => void) {
  const events: string[] = [];
  server = createServer((_req, res) => handle(res, events));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const res = await fetch(`http://127.0.0.1:${port}/`);
  const body = await res.text();
  events.push('client has the body');
  return { body, events };
}

/** A store call that takes 30 ms. */
const slowTask = (events: string[]) => () =>
  new Promise<void>((resolve) =>
    setTimeout(() => {
      events.push('task done');
      resolve();
    }, 30),
  );

it('a body written with write() and a Content-Length waits for the tasks (Fastify 5.0)', async () => {
  const { body, events } = await serve((res, events) => {
    beforeEnd(res, slowTask(events));
    res.writeHead(200, { 'content-length': '2' });
    res.write('ok');
    res.end();
  });
  expect(body).toBe('ok');
  expect(events).toEqual(['task done', 'client has the body']);
});

it('a body sent with end(body) waits for the tasks', async () => {
  const { body, events } = await serve((res, events) => {
    beforeEnd(res, slowTask(events));
    res.end('ok');
  });
  expect(body).toBe('ok');
  expect(events).toEqual(['task done', 'client has the body']);
});

it('writes after the tasks settled still go through a write wrapper added after the limiter', async () => {
  const { body } = await serve((res, events) => {
    beforeEnd(res, slowTask(events));
    // A later middleware (compression-style) wraps write and end and calls through ours.
    const write = res.write as (chunk: string) => boolean;
    const end = res.end as (chunk?: string) => ServerResponse;
    res.write = ((chunk: string) => write.call(res, chunk.toUpperCase())) as typeof res.write;
    res.end = ((chunk?: string) => end.call(res, chunk?.toUpperCase())) as typeof res.end;
    res.write('a');
    setTimeout(() => {
      res.write('b');
      res.end('c');
    }, 60);
  });
  expect(body).toBe('ABC');
});
