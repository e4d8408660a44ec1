/**
 * What the guard answers when the store cannot decide, on both platforms: 503 with
 * the store-unavailable problem and Retry-After at the breaker's next probe for 'closed', and no
 * quota headers at all when no store decided.
 */
import 'reflect-metadata';
import { memoryStore, redisStore } from '@floodgate/core';
import { STORE_UNAVAILABLE_TYPE } from '@floodgate/core/http';
import { RateLimitExceptionFilter, RateLimitModule } from '@floodgate/nestjs';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { Redis } from 'ioredis';
import { parseList } from 'structured-headers';
import request from 'supertest';
import { freePort } from '../../../test/harness/redis-server.js';
import { BearerAuthGuard, closeApps, DevicesController, PLATFORMS } from './app.js';

const QUOTA_HEADERS = [
  'ratelimit',
  'ratelimit-policy',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
];

describe.each(PLATFORMS)(
  'RateLimitGuard on $name: store failures and header drafts',
  (platform) => {
    let dead: Redis;
    beforeEach(async () => {
      dead = new Redis({
        host: '127.0.0.1',
        port: await freePort(),
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        connectTimeout: 200,
        disconnectTimeout: 50,
      });
      dead.on('error', () => undefined);
    });
    afterEach(async () => {
      await closeApps();
      dead.disconnect();
    });

    const boot = (options: object, problemBodies = false) =>
      platform.boot({
        imports: [
          RateLimitModule.forRoot({
            store: redisStore({ client: dead }),
            global: true,
            headers: { legacy: true },
            ...options,
          }),
        ],
        controllers: [DevicesController],
        providers: [
          { provide: APP_GUARD, useClass: BearerAuthGuard },
          ...(problemBodies ? [{ provide: APP_FILTER, useClass: RateLimitExceptionFilter }] : []),
        ],
      });
    const closed = {
      onStoreError: 'closed',
      circuitBreaker: { failureThreshold: 1, cooldown: '30s' },
    };

    it.each([false, true])(
      "'closed': 503 with Retry-After at the next probe, no quota headers (problem filter: %p)",
      async (problemBodies) => {
        const server = (await boot(closed, problemBodies)).getHttpServer();
        const res = await request(server).get('/devices');
        expect(res.status).toBe(503);
        if (problemBodies) {
          expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
          expect(JSON.parse(res.text)).toMatchObject({ type: STORE_UNAVAILABLE_TYPE, status: 503 });
        } else {
          expect(res.body).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
        }
        const retryAfter = Number(res.headers['retry-after']);
        expect(retryAfter).toBeGreaterThanOrEqual(29);
        expect(retryAfter).toBeLessThanOrEqual(30);
        for (const name of QUOTA_HEADERS) expect(res.headers[name]).toBeUndefined();
      },
    );

    it("'open': admitted with no quota headers", async () => {
      const server = (await boot({})).getHttpServer();
      const res = await request(server).get('/devices');
      expect(res.status).toBe(200);
      for (const name of QUOTA_HEADERS) expect(res.headers[name]).toBeUndefined();
      expect(res.headers['retry-after']).toBeUndefined();
    });

    it("headers.standard 'draft-8' adds a partition key per client", async () => {
      const app = await platform.boot({
        imports: [
          RateLimitModule.forRoot({
            store: memoryStore(),
            global: true,
            headers: { standard: 'draft-8' },
          }),
        ],
        controllers: [DevicesController],
        providers: [{ provide: APP_GUARD, useClass: BearerAuthGuard }],
      });
      const server = app.getHttpServer();
      const pk = async (client: string) => {
        const res = await request(server).get('/devices').set('Authorization', `Bearer ${client}`);
        const item = parseList(res.headers['ratelimit-policy']!)[0]!;
        return Buffer.from(item[1].get('pk') as ArrayBuffer).toString('hex');
      };
      const a = await pk('app-a');
      expect(a).toHaveLength(24);
      expect(await pk('app-a')).toBe(a);
      expect(await pk('app-b')).not.toBe(a);
    });
  },
);
