/**
 * GraphQL resolvers limited per resolver: Apollo on Express and on Fastify, Mercurius on
 * Fastify, over the memory store and the harness Redis. The key comes from the GraphQL
 * context's request, the headers go on the HTTP response, a denial is a GraphQL error whose
 * extensions carry the decision.
 */
import 'reflect-metadata';
import type { Store } from '@floodgate/core';
import { RateLimit, RateLimitModule, SkipRateLimit } from '@floodgate/nestjs';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import type { ExecutionContext, ModuleMetadata } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import {
  Args,
  GqlExecutionContext,
  GraphQLModule,
  Mutation,
  Query,
  Resolver,
} from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import request from 'supertest';
import { BearerAuthGuard, closeApps, PLATFORMS, redisKeys, STORES } from './app.js';

const typeDefs = /* GraphQL */ `
  type Device { id: ID! }
  type Query { devices: [Device!]!, health: Boolean! }
  type Mutation { reboot(id: ID!): Boolean! }
`;

@Resolver()
@RateLimit({ limit: 3, window: '1m', key: ['clientId', 'ip'] })
export class DevicesResolver {
  @Query('devices')
  devices() {
    return [{ id: 'cam-7' }];
  }

  @Mutation('reboot')
  @RateLimit({ limit: 1, window: '1m', key: ['clientId', 'ip'], name: 'reboots' })
  reboot(@Args('id') _id: string) {
    return true;
  }

  @Query('health')
  @SkipRateLimit()
  health() {
    return true;
  }
}

const DRIVERS = [
  {
    name: 'Apollo on Express',
    platform: PLATFORMS[0]!,
    graphql: () => GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, typeDefs }),
  },
  {
    name: 'Apollo on Fastify',
    platform: PLATFORMS[1]!,
    // Apollo's Fastify integration hands the context function the request and the reply.
    graphql: () =>
      GraphQLModule.forRoot<ApolloDriverConfig>({
        driver: ApolloDriver,
        typeDefs,
        context: (req: unknown, reply: unknown) => ({ req, reply }),
      }),
  },
  {
    name: 'Mercurius on Fastify',
    platform: PLATFORMS[1]!,
    graphql: () =>
      GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, typeDefs }),
  },
];

const CASES = DRIVERS.flatMap((driver) => STORES.map((store) => ({ driver, store })));
const bearer = (clientId: string) => ({ Authorization: `Bearer ${clientId}` });

describe.each(CASES)('GraphQL with $driver.name and the $store.name store', ({ driver, store }) => {
  let s: Store;
  beforeEach(async () => {
    s = await store.make();
  });
  afterEach(closeApps);
  afterAll(() => store.close());

  const boot = (options: object = {}) => {
    const metadata: ModuleMetadata = {
      imports: [driver.graphql(), RateLimitModule.forRoot({ store: s, global: true, ...options })],
      providers: [DevicesResolver, { provide: APP_GUARD, useClass: BearerAuthGuard }],
    };
    return driver.platform.boot(metadata);
  };
  const gql = (server: unknown, query: string, who?: string) => {
    const req = request(server as never)
      .post('/graphql')
      .send({ query });
    return who ? req.set(bearer(who)) : req;
  };

  it('limits each resolver per client, with headers on the HTTP response', async () => {
    const server = (await boot()).getHttpServer();
    for (const remaining of [2, 1, 0]) {
      const res = await gql(server, '{ devices { id } }', 'alice').expect(200);
      expect(res.body.data).toEqual({ devices: [{ id: 'cam-7' }] });
      expect(res.headers.ratelimit).toBe(`"fixed-3-per-60s";r=${remaining};t=50`);
    }
    const denied = await gql(server, '{ devices { id } }', 'alice').expect(200);
    expect(denied.body.data).toBeNull();
    expect(denied.body.errors).toHaveLength(1);
    expect(denied.body.errors[0]).toMatchObject({
      message: 'Too Many Requests',
      path: ['devices'],
      extensions: {
        code: 'TOO_MANY_REQUESTS',
        retryAfter: 50_000,
        policy: 'fixed-3-per-60s',
        remaining: 0,
      },
    });
    expect(denied.headers['retry-after']).toBe('50');
    // Another client (the key comes from the GraphQL context's request).
    await gql(server, '{ devices { id } }', 'bob').expect(200);
    if (store.name === 'redis') {
      expect((await redisKeys()).map((k) => k.replace(/:fw[^|]*/, ':<id>'))).toEqual([
        'rl:{client:alice}:<id>|Query devices',
        'rl:{client:bob}:<id>|Query devices',
      ]);
    }
  });

  it('a mutation has its own decorator and budget; a skipped field is not limited', async () => {
    const server = (await boot()).getHttpServer();
    await gql(server, 'mutation { reboot(id: "cam-7") }', 'alice').expect(200, {
      data: { reboot: true },
    });
    const denied = await gql(server, 'mutation { reboot(id: "cam-7") }', 'alice');
    expect(denied.body.errors[0].extensions).toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      policy: 'reboots',
    });
    for (let i = 0; i < 5; i++) {
      const res = await gql(server, '{ health }', 'alice').expect(200);
      expect(res.body).toEqual({ data: { health: true } });
    }
    await gql(server, '{ devices { id } }', 'alice').expect(200);
  });

  it('module policies with scope global count every field, and errorMessage applies', async () => {
    const { fixedWindow } = await import('@floodgate/core');
    const server = (
      await boot({
        policies: fixedWindow({ limit: 2, window: '1m', name: 'api' }),
        scope: 'global',
        key: ['clientId', 'ip'],
        errorMessage: 'Slow down',
      })
    ).getHttpServer();
    // Each limited field of an operation takes its unit of the API-wide budget (aliases too).
    const both = await gql(server, '{ a: devices { id } b: devices { id } }', 'alice').expect(200);
    expect(both.body.data).toEqual({ a: [{ id: 'cam-7' }], b: [{ id: 'cam-7' }] });
    expect(both.headers.ratelimit).toMatch(/"api";r=0;t=50/);
    const denied = await gql(server, '{ devices { id } }', 'alice').expect(200);
    expect(denied.body.errors[0]).toMatchObject({
      message: 'Slow down',
      extensions: { code: 'TOO_MANY_REQUESTS', policy: 'api' },
    });
  });

  it('a lockout is a GraphQL error that says it is a block', async () => {
    const { fixedWindow } = await import('@floodgate/core');
    const server = (
      await boot({
        policies: fixedWindow({ limit: 1, window: '1m', name: 'api', blockDuration: '5m' }),
        scope: 'global',
        key: ['clientId', 'ip'],
      })
    ).getHttpServer();
    await gql(server, '{ devices { id } }', 'alice').expect(200);
    await gql(server, '{ devices { id } }', 'alice').expect(200);
    const blocked = await gql(server, '{ devices { id } }', 'alice').expect(200);
    expect(blocked.body.errors[0].extensions).toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      policy: 'api',
      blocked: true,
      retryAfter: 300_000,
    });
  });

  it('shadow mode answers every field and counts', async () => {
    const server = (await boot({ shadow: true })).getHttpServer();
    for (let i = 0; i < 5; i++) {
      const res = await gql(server, '{ devices { id } }', 'alice').expect(200);
      expect(res.body).toEqual({ data: { devices: [{ id: 'cam-7' }] } });
      expect(res.headers.ratelimit).toBeUndefined();
    }
    if (store.name === 'redis') expect(await redisKeys()).toHaveLength(1);
  });

  it('a deny list refuses with a GraphQL error, code FORBIDDEN, before the store', async () => {
    const server = (
      await boot({
        deny: (context: ExecutionContext) =>
          GqlExecutionContext.create(context).getContext().req?.headers?.['x-banned'] === '1' ||
          GqlExecutionContext.create(context).getContext().reply?.request?.headers?.['x-banned'] ===
            '1',
      })
    ).getHttpServer();
    const denied = await gql(server, '{ devices { id } }', 'alice')
      .set('x-banned', '1')
      .expect(200);
    expect(denied.body.errors[0].extensions).toMatchObject({
      code: 'FORBIDDEN',
      status: 403,
      type: 'tag:floodgate.dev,2026:problem:access-denied',
    });
    if (store.name === 'redis') expect(await redisKeys()).toEqual([]);
    await gql(server, '{ devices { id } }', 'alice').expect(200, {
      data: { devices: [{ id: 'cam-7' }] },
    });
  });
});
