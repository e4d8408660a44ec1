/**
 * docs/recipes.md, run: every recipe there is the exact text of a file in test/recipes/ (checked
 * here, so the page cannot drift from the tested code), and each file's app is exercised with
 * supertest on the memory store and on Redis.
 */
import http, { type Server } from 'node:http';
import type { Store } from '@floodgate/core';
import type { RequestHandler } from 'express';
import request from 'supertest';
import { flushRedis, useTestRedisConnection } from '../../../test/harness/redis';
import { storesOn } from '../../../test/harness/stores';
import { createPublicApp } from './recipes/allowlist';
import { createBanApp } from './recipes/banned-keys';
import { type CompletionModel, createLlmApp } from './recipes/llm-tokens';
import { createLoginApp } from './recipes/login';
import { itShowsRecipesExactly, useRecipeServer } from './recipes-table';

const RECIPES = ['login.ts', 'banned-keys.ts', 'llm-tokens.ts', 'allowlist.ts'];

itShowsRecipesExactly(RECIPES);

const redis = useTestRedisConnection();

// Midnight UTC: day and hour windows start now.
const T0 = Date.UTC(2026, 0, 1);
let now = T0;
const clock = () => now;
const stores = storesOn(clock, redis);

describe.each(stores)('recipes on the %s store', (storeName, makeStore) => {
  let store: Store;
  beforeEach(async () => {
    now = T0;
    if (storeName === 'redis') await flushRedis(redis());
    store = makeStore();
  });
  const serve = useRecipeServer();

  describe('login brute force', () => {
    const verify = async (username: string, password: string) =>
      username === 'alice' && password === 'correct horse';
    const login = (s: Server, username: string, password: string) =>
      request(s).post('/login').send({ username, password });

    it('5 failures lock the IP+username out before the password is checked, progressively', async () => {
      const s = serve(createLoginApp(store, verify));
      for (let i = 0; i < 5; i++) expect((await login(s, 'alice', 'guess')).status).toBe(401);
      const locked = await login(s, 'alice', 'correct horse');
      expect(locked.status).toBe(429);
      expect(locked.headers['retry-after']).toBe('900');
      expect(JSON.parse(locked.text).blocked).toBe(true);
      // Another username from the same IP has its own budget.
      expect((await login(s, 'Bob', 'guess')).status).toBe(401);
      now += 900_000;
      // The failures go on: the next lockout is twice as long.
      for (let i = 0; i < 5; i++) expect((await login(s, 'ALICE ', 'guess')).status).toBe(401);
      expect((await login(s, 'alice', 'guess')).headers['retry-after']).toBe('1800');
    });

    it('a successful login resets the IP+username key: earlier failures and lockouts are forgotten', async () => {
      const s = serve(createLoginApp(store, verify));
      for (let i = 0; i < 5; i++) expect((await login(s, 'alice', 'guess')).status).toBe(401);
      expect((await login(s, 'alice', 'guess')).status).toBe(429);
      now += 900_000;
      expect((await login(s, 'alice', 'correct horse')).status).toBe(200);
      for (let i = 0; i < 5; i++) expect((await login(s, 'alice', 'guess')).status).toBe(401);
      // Back to the first step of the progression: 15 minutes, not 30.
      expect((await login(s, 'alice', 'guess')).headers['retry-after']).toBe('900');
    });

    it('successes are not counted; 100 failures a day from one IP lock the IP out for a day', async () => {
      const s = serve(createLoginApp(store, verify));
      for (let i = 0; i < 20; i++)
        expect((await login(s, 'alice', 'correct horse')).status).toBe(200);
      for (let i = 0; i < 100; i++) expect((await login(s, `user${i}`, 'guess')).status).toBe(401);
      const locked = await login(s, 'alice', 'correct horse');
      expect(locked.status).toBe(429);
      expect(locked.headers['retry-after']).toBe('86400');
    });
  });

  describe('banned-key admin endpoint', () => {
    const TOKEN = 's3cret-admin-token';
    const admin = (s: Server, method: 'put' | 'delete', key: string, token = TOKEN) =>
      request(s)
        [method](`/admin/blocks/${encodeURIComponent(key)}`)
        .set('Authorization', `Bearer ${token}`);

    it('blocks and unblocks an API key; a block for ever has no Retry-After', async () => {
      const s = serve(createBanApp(store, TOKEN));
      expect((await request(s).get('/api/hello')).status).toBe(200);
      expect((await admin(s, 'put', 'ip:127.0.0.1').send({ duration: '1h' })).status).toBe(204);
      const blocked = await request(s).get('/api/hello');
      expect([blocked.status, blocked.headers['retry-after']]).toEqual([429, '3600']);
      expect((await admin(s, 'put', 'ip:127.0.0.1')).status).toBe(204);
      const forever = await request(s).get('/api/hello');
      expect([forever.status, forever.headers['retry-after']]).toEqual([429, undefined]);
      expect((await admin(s, 'delete', 'ip:127.0.0.1')).status).toBe(204);
      expect((await request(s).get('/api/hello')).status).toBe(200);
      expect((await admin(s, 'put', 'ip:127.0.0.1').send({ duration: 'soon' })).status).toBe(400);
    });

    it('the admin endpoint needs the token, and guessing it locks the guesser out', async () => {
      const s = serve(createBanApp(store, TOKEN));
      for (let i = 0; i < 10; i++) {
        expect((await admin(s, 'put', 'ip:198.51.100.1', `guess-${i}`)).status).toBe(401);
      }
      const locked = await admin(s, 'put', 'ip:198.51.100.1');
      expect([locked.status, locked.headers['retry-after']]).toEqual([429, '3600']);
      expect((await request(s).get('/api/hello')).status).toBe(200);
    });
  });

  describe('LLM endpoint charged by tokens', () => {
    let used: number | Error = 0;
    const model: CompletionModel = {
      complete: async (prompt) => {
        if (used instanceof Error) throw used;
        return { text: `echo ${prompt.length}`, tokens: used };
      },
    };
    const authenticate: RequestHandler = (req, res, next) => {
      const id = req.get('authorization')?.match(/^Bearer (\w+)$/)?.[1];
      if (id === undefined) {
        res.status(401).json({ error: 'unauthenticated' });
        return;
      }
      (req as { user?: unknown }).user = { id };
      next();
    };
    // 400 characters ≈ 100 tokens, plus maxTokens 1000: an estimate of 1100.
    const complete = (s: Server, user = 'u1') =>
      request(s)
        .post('/v1/complete')
        .set('Authorization', `Bearer ${user}`)
        .send({ prompt: 'x'.repeat(400), maxTokens: 1000 });

    it('charges the estimate, refunds what was not used, charges an overrun into debt', async () => {
      const s = serve(createLlmApp(store, model, authenticate));
      used = 300;
      const first = await complete(s);
      expect(first.status).toBe(200);
      expect(first.headers.ratelimit).toBe('"requests";r=59;t=60, "tokens";r=38900;t=4');
      // 800 of the 1100 came back: 40 000 − 300 − this request's 1100.
      used = 1500;
      expect((await complete(s)).headers.ratelimit).toBe(
        '"requests";r=58;t=60, "tokens";r=38600;t=5',
      );
      // That one used 400 more than its estimate: 38 600 − 400 − 1100.
      used = 0;
      expect((await complete(s)).headers.ratelimit).toBe(
        '"requests";r=57;t=60, "tokens";r=37100;t=9',
      );
      expect((await complete(s, 'u2')).headers.ratelimit).toBe(
        '"requests";r=59;t=60, "tokens";r=38900;t=4',
      );
      // An overrun past the whole budget is charged all the same: 38 200 tokens left before it,
      // 100 000 used, so 61 800 in debt; the next request waits until 62 900 are back.
      used = 100_000;
      expect((await complete(s)).status).toBe(200);
      used = 0;
      const denied = await complete(s);
      expect(denied.status).toBe(429);
      // (The requests middleware runs first: it counted this request before the tokens one denied it.)
      expect(denied.headers.ratelimit).toBe('"requests";r=55;t=60, "tokens";r=0;t=189');
    });

    it('a failed completion gives the whole estimate back; no user, no budget', async () => {
      const s = serve(createLlmApp(store, model, authenticate));
      used = new Error('model unavailable');
      expect((await complete(s)).status).toBe(500);
      used = 0;
      expect((await complete(s)).headers.ratelimit).toBe(
        '"requests";r=58;t=60, "tokens";r=38900;t=4',
      );
      expect((await request(s).post('/v1/complete').send({ prompt: 'hi' })).status).toBe(401);
    });
  });

  describe('LLM endpoint: a client that goes away mid-completion', () => {
    it('stays charged at its estimate, never refunded for aborting', async () => {
      let reached!: () => void;
      const inModel = new Promise<void>((resolve) => {
        reached = resolve;
      });
      let answer!: () => void;
      const answered = new Promise<void>((resolve) => {
        answer = resolve;
      });
      let settled!: () => void;
      const done = new Promise<void>((resolve) => {
        settled = resolve;
      });
      let calls = 0;
      const model: CompletionModel = {
        complete: async () => {
          if (calls++ > 0) return { text: 'hi', tokens: 0 };
          reached();
          await answered;
          return { text: 'spent', tokens: 300 };
        },
      };
      const authenticate: RequestHandler = (req, _res, next) => {
        (req as { user?: unknown }).user = { id: 'u1' };
        next();
      };
      const s = serve(createLlmApp(store, model, authenticate));
      s.on('request', (_req, res) => res.once('close', () => settled()));
      if (!s.listening) await new Promise((resolve) => s.once('listening', resolve));
      const { port } = s.address() as { port: number };
      const body = JSON.stringify({ prompt: 'x'.repeat(400), maxTokens: 1000 });
      const aborted = http.request({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/complete',
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      });
      aborted.on('error', () => undefined);
      aborted.end(body);
      await inModel;
      aborted.destroy();
      await done;
      // The model answers after the client left: its 300 tokens were spent all the same.
      answer();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const next = await request(s)
        .post('/v1/complete')
        .send({ prompt: 'x'.repeat(400), maxTokens: 1000 });
      // 40 000 − 1 100 (the aborted completion's estimate) − 1 100 (this one's).
      expect(next.headers.ratelimit).toBe('"requests";r=58;t=60, "tokens";r=37800;t=7');
    });
  });

  describe('allowlist for health checks and internal networks', () => {
    const from = (s: Server, path: string, ip: string) =>
      request(s).get(path).set('X-Forwarded-For', ip);

    it('internal clients and health checks are never limited; others are', async () => {
      const s = serve(createPublicApp(store, 1));
      for (const ip of ['10.1.2.3', '192.168.7.7', 'fd00::5', '::ffff:172.16.0.9']) {
        const res = await from(s, '/api/items', ip);
        expect([ip, res.status, res.headers.ratelimit]).toEqual([ip, 200, undefined]);
      }
      for (let i = 0; i < 60; i++)
        expect((await from(s, '/api/items', '203.0.113.5')).status).toBe(200);
      expect((await from(s, '/api/items', '203.0.113.5')).status).toBe(429);
      expect((await from(s, '/healthz', '203.0.113.5')).status).toBe(200);
      // One trusted hop: a client cannot claim an internal address in front of its own.
      expect((await from(s, '/api/items', '10.0.0.1, 203.0.113.5')).status).toBe(429);
    });
  });
});
