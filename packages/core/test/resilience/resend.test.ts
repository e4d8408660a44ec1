/**
 * A decision must never be charged twice, and never charged after the failure policy answered
 * it: ioredis re-sends unanswered commands after a reconnect (autoResendUnfulfilledCommands, on
 * by default) and both clients replay their offline queue on reconnect. Each test starts its
 * own redis-server and uses the clients' defaults, as a new user would.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server.js';
import { type ResendClient, resendSafetyTests } from './resend-kit.js';

jest.setTimeout(60_000);

let server: RedisServerHandle;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

type Client = ResendClient;

async function ioredisDefaults(): Promise<Client> {
  const client = new Redis(server.url, { retryStrategy: () => 20 });
  client.on('error', () => undefined);
  await client.ping();
  return { client, close: async () => void client.disconnect() };
}

async function nodeRedisDefaults(): Promise<Client> {
  const client = createClient({
    url: server.url,
    socket: { reconnectStrategy: () => 20 },
  });
  client.on('error', () => undefined);
  await client.connect();
  return { client, close: async () => void client.destroy() };
}

// Batched (the default) and one EVALSHA per decision.
const clients: Array<[string, () => Promise<Client>, boolean]> = [
  ['ioredis', ioredisDefaults, true],
  ['ioredis (batch: false)', ioredisDefaults, false],
  ['node-redis', nodeRedisDefaults, true],
  ['node-redis (batch: false)', nodeRedisDefaults, false],
];

describe.each(clients)('%s with its default settings', (_label, connect, batch) => {
  resendSafetyTests(() => server, connect, batch);
});
