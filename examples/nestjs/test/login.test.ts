/**
 * The login route's brute-force protection (docs/recipes.md): per IP and per IP + username,
 * failures only, progressive lockouts, and a successful login resetting the per-username key.
 */
import 'reflect-metadata';
import { memoryStore } from '@floodgate/core';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule } from '../src/app.module.js';

// Starts at midnight UTC: the windows (1 day per IP, 15 min per user) start with the test.
let now = Date.UTC(2030, 0, 1, 0, 0, 0);
const minutes = (n: number) => n * 60_000;
const alice = 'alice@acme.example';
const password = 'correct horse battery staple';

let app: INestApplication;

beforeEach(async () => {
  now = Date.UTC(2030, 0, 1, 0, 0, 0);
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register(memoryStore({ clock: () => now }))],
  }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
});

afterEach(() => app.close());

const login = (username: string, secret: string) =>
  request(app.getHttpServer()).post('/login').send({ username, password: secret });

it('logs in without a token and hands one out', async () => {
  const res = await login(alice, password).expect(200);
  expect(res.body).toEqual({ token: 'token-acme' });
  await request(app.getHttpServer())
    .get('/devices')
    .set('Authorization', `Bearer ${res.body.token}`)
    .expect(200);
});

it('never limits a user who gets the password right', async () => {
  for (let i = 0; i < 30; i++) await login(alice, password).expect(200);
});

it('locks a username out after 5 failures from one IP, the right password included', async () => {
  for (let i = 0; i < 5; i++) await login(alice, 'guess').expect(401);
  const denied = await login(alice, password).expect(429);
  expect(denied.body.policy).toBe('login-user');
  const blocked = await login(alice, password).expect(429);
  expect(blocked.body).toMatchObject({ blocked: true, policy: 'login-user' });
  expect(blocked.headers['retry-after']).toBe('900');
  // Another username from the same IP is not locked out.
  await login('bob@acme.example', 'guess').expect(401);
  now += minutes(15) + 1000;
  await login(alice, password).expect(200);
});

it('doubles the lockout when the failures go on, and a success resets it', async () => {
  const lockOut = async (username: string) => {
    for (let i = 0; i < 5; i++) await login(username, 'guess').expect(401);
    await login(username, 'guess').expect(429);
    return (await login(username, 'guess').expect(429)).headers['retry-after'];
  };
  expect(await lockOut(alice)).toBe('900');
  now += minutes(15) + 1000;
  expect(await lockOut(alice)).toBe('1800');
  now += minutes(30) + 1000;
  // The right password: the per-username key is reset, lockout streak included.
  await login(alice, password).expect(200);
  expect(await lockOut(alice)).toBe('900');
});

it('locks the IP out for a day after 100 failures, whatever the usernames', async () => {
  for (let user = 0; user < 20; user++) {
    for (let i = 0; i < 5; i++) await login(`user${user}@example.com`, 'guess').expect(401);
  }
  const denied = await login(alice, password).expect(429);
  expect(denied.body.policy).toBe('login-ip');
  const blocked = await login(alice, password).expect(429);
  expect(blocked.body).toMatchObject({ blocked: true, policy: 'login-ip' });
  expect(blocked.headers['retry-after']).toBe('86400');
});

it('a username with a lone surrogate, or cut inside an emoji, is a 401, not a 500', async () => {
  // JSON may carry "\ud800"; slice(0, 254) may cut "😀" in two: neither is a key the store takes.
  const raw = (body: string) =>
    request(app.getHttpServer()).post('/login').set('Content-Type', 'application/json').send(body);
  await raw('{"username":"\\ud800","password":"guess"}').expect(401);
  await login(`${'a'.repeat(253)}😀`, 'guess').expect(401);
});
