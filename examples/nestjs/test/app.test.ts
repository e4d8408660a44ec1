/**
 * Boots the example application and checks its limits: 5 reboots a minute per client id,
 * per-client buckets, an unlimited health route, the GraphQL query and the socket.io gateway.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { memoryStore } from '@floodgate/core';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { io } from 'socket.io-client';
import request from 'supertest';
import { AppModule } from '../src/app.module.js';

// A fixed instant 30 s into a minute: the one-minute window cannot roll over mid-test.
const clock = () => Date.UTC(2030, 0, 1, 12, 0, 30);
const acme = { Authorization: 'Bearer token-acme' };
const globex = { Authorization: 'Bearer token-globex' };

let app: INestApplication;

beforeEach(async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register(memoryStore({ clock }))],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
});

afterEach(() => app.close());

it('allows 5 reboots a minute per client id, then answers 429', async () => {
  const server = app.getHttpServer();
  for (let i = 0; i < 5; i++) {
    await request(server).post('/devices/cam-7/reboot').set(acme).expect(202);
  }
  const denied = await request(server).post('/devices/cam-7/reboot').set(acme).expect(429);
  expect(denied.headers['retry-after']).toBe('30');
  expect(denied.headers.ratelimit).toBe(
    '"reboots-per-minute";r=0;t=30, "reboots-per-hour";r=15;t=3570',
  );
  expect(denied.body).toMatchObject({ statusCode: 429, policy: 'reboots-per-minute' });
  // Another app (client id) has its own budget.
  await request(server).post('/devices/cam-7/reboot').set(globex).expect(202);
  // The controller-wide 100/min policy counts per route: listing is untouched.
  const list = await request(server).get('/devices').set(acme).expect(200);
  expect(list.body.callsLeftThisMinute).toBe(99);
  expect(list.headers['ratelimit-policy']).toBe('"fixed-100-per-60s";q=100;w=60');
});

it('needs a token for devices but never limits /health', async () => {
  const server = app.getHttpServer();
  await request(server).get('/devices').expect(401);
  for (let i = 0; i < 150; i++) {
    const res = await request(server).get('/health').expect(200);
    expect(res.headers.ratelimit).toBeUndefined();
  }
});

it('limits the GraphQL devices query to 30 a minute per client id', async () => {
  const server = app.getHttpServer();
  const query = { query: '{ devices { id } }' };
  for (let i = 0; i < 30; i++) {
    const res = await request(server).post('/graphql').set(acme).send(query).expect(200);
    expect(res.body.data.devices).toHaveLength(2);
  }
  const denied = await request(server).post('/graphql').set(acme).send(query).expect(200);
  expect(denied.headers.ratelimit).toBe('"fixed-30-per-60s";r=0;t=30');
  expect(denied.body.errors[0].extensions).toMatchObject({
    code: 'TOO_MANY_REQUESTS',
    retryAfter: 30_000,
  });
  await request(server).post('/graphql').set(globex).send(query).expect(200);
});

it('limits gateway subscriptions to 10 per 10 s per client id', async () => {
  const { port } = app.getHttpServer().address() as AddressInfo;
  const socket = io(`http://127.0.0.1:${port}/events`, {
    transports: ['websocket'],
    extraHeaders: acme,
  });
  try {
    const replies: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      replies.push(await socket.timeout(5000).emitWithAck('subscribe', 'cam-7'));
    }
    expect(replies).toEqual(Array(10).fill({ subscribed: 'cam-7' }));
    const exception = new Promise((resolve) => socket.once('exception', resolve));
    socket.emit('subscribe', 'cam-7');
    expect(await exception).toMatchObject({ code: 'TOO_MANY_REQUESTS', statusCode: 429 });
  } finally {
    socket.close();
  }
});
