/**
 * Type tests, checked by `tsc -p tsconfig.json` in `npm test`: every supported
 * client compiles as `redisStore({ client })`, and the usual slips do not (an unused
 * `@ts-expect-error` is itself an error). Nothing here runs.
 */
import { redisStore } from '@floodgate/core';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';

export function supportedClients() {
  return [
    redisStore({ client: new Redis() }),
    redisStore({ client: new Cluster([{ host: '127.0.0.1', port: 7000 }]) }),
    redisStore({ client: createClient() }),
    redisStore({ client: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }) }),
  ];
}

export function slips() {
  // @ts-expect-error a URL is not a client: create one (new Redis(url)) and pass it
  redisStore({ client: 'redis://127.0.0.1:6379' });
  // @ts-expect-error an object that is no Redis client
  redisStore({ client: { get: async () => null } });
  // @ts-expect-error the client itself instead of { client }
  redisStore(new Redis());
  // @ts-expect-error a node-redis client itself instead of { client }
  redisStore(createClient());
}
