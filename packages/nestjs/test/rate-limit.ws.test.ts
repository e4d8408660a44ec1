/**
 * WebSocket gateways: `@RateLimit` on a gateway class and on `@SubscribeMessage` handlers,
 * per connection or per authenticated client, a denial sent as a WsException carrying the
 * decision; with the socket.io and ws adapters, over the memory store and the harness Redis.
 */
import 'reflect-metadata';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Store } from '@floodgate/core';
import { connectionKey, RateLimit, RateLimitGuard, RateLimitModule } from '@floodgate/nestjs';
import { type INestApplication, UseGuards } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { WsAdapter } from '@nestjs/platform-ws';
import { Test } from '@nestjs/testing';
import {
  MessageBody,
  type OnGatewayConnection,
  SubscribeMessage,
  WebSocketGateway,
} from '@nestjs/websockets';
import { io, type Socket } from 'socket.io-client';
import WebSocket from 'ws';
import { redisKeys, STORES } from './app.js';

/** The principal from `Authorization: Bearer <id>` at the handshake, as an auth step would. */
function principal(headers: IncomingMessage['headers']): { clientId: string } | undefined {
  const header = headers.authorization;
  return header?.startsWith('Bearer ') ? { clientId: header.slice(7) } : undefined;
}

@WebSocketGateway()
@UseGuards(RateLimitGuard)
@RateLimit({ limit: 3, window: '1m', key: ['clientId', connectionKey] })
export class ChatGateway implements OnGatewayConnection {
  handleConnection(client: Record<string, unknown>, request?: IncomingMessage): void {
    // socket.io keeps the handshake on the socket; ws hands the upgrade request here.
    const handshake =
      (client.handshake as { headers: IncomingMessage['headers'] } | undefined) ?? request;
    const user = handshake ? principal(handshake.headers) : undefined;
    if (client.data && typeof client.data === 'object')
      (client.data as { user?: unknown }).user = user;
    else client.user = user;
  }

  @SubscribeMessage('chat')
  chat(@MessageBody() text: string) {
    return { event: 'chat', data: `echo ${text}` };
  }

  /** Refused by its limit's deny list: every caller is on it. */
  @SubscribeMessage('closed')
  @RateLimit({ limit: 5, window: '1m', key: connectionKey, name: 'closed', deny: () => true })
  closed() {
    return { event: 'closed', data: 'open after all' };
  }

  @SubscribeMessage('ping')
  @RateLimit({ limit: 1, window: '1m', key: connectionKey, name: 'pings' })
  ping() {
    return { event: 'pong', data: 'pong' };
  }
}

interface Client {
  send(event: string, data: string): void;
  /** The next message: `[event, data]`. */
  next(): Promise<[string, unknown]>;
  close(): void;
}

async function socketIoClient(url: string, auth?: string): Promise<Client> {
  const socket: Socket = io(url, {
    transports: ['websocket'],
    extraHeaders: auth ? { authorization: `Bearer ${auth}` } : {},
  });
  const queue: [string, unknown][] = [];
  const waiting: ((m: [string, unknown]) => void)[] = [];
  socket.onAny((event: string, data: unknown) => {
    const waiter = waiting.shift();
    if (waiter) waiter([event, data]);
    else queue.push([event, data]);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  return {
    // An acknowledgement callback would hide the return value; events come back by name.
    send: (event, data) => {
      socket.emit(event, data, (reply: unknown) => {
        const message = reply as { event: string; data: unknown };
        const waiter = waiting.shift();
        if (waiter) waiter([message.event, message.data]);
        else queue.push([message.event, message.data]);
      });
    },
    next: () =>
      queue.length > 0
        ? Promise.resolve(queue.shift()!)
        : new Promise((resolve) => waiting.push(resolve)),
    close: () => socket.close(),
  };
}

async function wsClient(url: string, auth?: string): Promise<Client> {
  const socket = new WebSocket(url.replace('http', 'ws'), {
    headers: auth ? { authorization: `Bearer ${auth}` } : {},
  });
  const queue: [string, unknown][] = [];
  const waiting: ((m: [string, unknown]) => void)[] = [];
  socket.on('message', (raw) => {
    const { event, data } = JSON.parse(String(raw)) as { event: string; data: unknown };
    const waiter = waiting.shift();
    if (waiter) waiter([event, data]);
    else queue.push([event, data]);
  });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return {
    send: (event, data) => socket.send(JSON.stringify({ event, data })),
    next: () =>
      queue.length > 0
        ? Promise.resolve(queue.shift()!)
        : new Promise((resolve) => waiting.push(resolve)),
    close: () => socket.close(),
  };
}

const ADAPTERS = [
  {
    name: 'socket.io',
    adapter: (app: INestApplication) => new IoAdapter(app),
    connect: socketIoClient,
  },
  { name: 'ws', adapter: (app: INestApplication) => new WsAdapter(app), connect: wsClient },
];
const CASES = ADAPTERS.flatMap((adapter) => STORES.map((store) => ({ adapter, store })));

describe.each(CASES)(
  'a gateway on $adapter.name with the $store.name store',
  ({ adapter, store }) => {
    let s: Store;
    let app: INestApplication;
    let url: string;
    const clients: Client[] = [];

    beforeEach(async () => {
      s = await store.make();
      const moduleRef = await Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ store: s })],
        providers: [ChatGateway],
      }).compile();
      app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
      app.useWebSocketAdapter(adapter.adapter(app));
      await app.listen(0, '127.0.0.1');
      url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    });
    afterEach(async () => {
      for (const client of clients.splice(0)) client.close();
      await app.close();
    });
    afterAll(() => store.close());

    const connect = async (auth?: string) => {
      const client = await adapter.connect(url, auth);
      clients.push(client);
      return client;
    };

    it('limits messages per authenticated client, across its connections', async () => {
      const first = await connect('alice');
      const second = await connect('alice');
      for (const client of [first, second, first]) {
        client.send('chat', 'hi');
        expect(await client.next()).toEqual(['chat', 'echo hi']);
      }
      second.send('chat', 'hi');
      const [event, error] = await second.next();
      expect(event).toBe('exception');
      expect(error).toMatchObject({
        status: 'error',
        statusCode: 429,
        code: 'TOO_MANY_REQUESTS',
        message: 'Too Many Requests',
        policy: 'fixed-3-per-60s',
        retryAfter: 50_000,
      });
      const bob = await connect('bob');
      bob.send('chat', 'hi');
      expect(await bob.next()).toEqual(['chat', 'echo hi']);
      if (store.name === 'redis') {
        expect((await redisKeys()).map((k) => k.replace(/:fw[^|]*/, ':<id>'))).toEqual([
          'rl:{client:alice}:<id>|WS chat',
          'rl:{client:bob}:<id>|WS chat',
        ]);
      }
    });

    it('limits anonymous connections each on its own, and a handler by its own decorator', async () => {
      const one = await connect();
      const two = await connect();
      one.send('ping', '');
      expect(await one.next()).toEqual(['pong', 'pong']);
      one.send('ping', '');
      expect(await one.next()).toMatchObject([
        'exception',
        { code: 'TOO_MANY_REQUESTS', policy: 'pings' },
      ]);
      two.send('ping', '');
      expect(await two.next()).toEqual(['pong', 'pong']);
    });

    it('a deny list refuses with a WsException (403, FORBIDDEN) before the store', async () => {
      const client = await connect('alice');
      client.send('closed', '');
      expect(await client.next()).toMatchObject([
        'exception',
        {
          status: 'error',
          statusCode: 403,
          code: 'FORBIDDEN',
          type: 'tag:floodgate.dev,2026:problem:access-denied',
        },
      ]);
      if (store.name === 'redis') expect(await redisKeys()).toEqual([]);
    });
  },
);
