/**
 * What the limiter needs from each kind of ExecutionContext: the request (for keys), where
 * headers go, and what a denial is thrown as. HTTP requests (Express or Fastify), GraphQL
 * resolvers (Apollo or Mercurius: the context's `req`/`res`, `request`/`reply` or `reply`) and
 * WebSocket messages (socket.io sockets and `ws` clients). Nothing here imports
 * `@nestjs/graphql`, `@nestjs/websockets` or `graphql` up front: they are optional peers, loaded
 * only when a GraphQL or WebSocket denial has to be thrown (an app that has such contexts has
 * them installed).
 */
import { type HeaderTarget, type HttpRequestView, trustsEveryHop } from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';

/** A request as the key sources read it: Express, Fastify, or a WebSocket handshake. */
export type RequestLike = Record<PropertyKey, unknown> & {
  ip?: string;
  headers?: Record<string, string | string[] | undefined>;
  query?: Record<string, unknown>;
  user?: unknown;
};

/** The transports the guard limits. */
export type Transport = 'http' | 'graphql' | 'ws';

/** `http`, `graphql`, `ws`, or undefined for contexts that are not limited (e.g. RPC). */
export function transportOf(context: ExecutionContext): Transport | undefined {
  const type = context.getType<string>();
  return type === 'http' || type === 'graphql' || type === 'ws' ? type : undefined;
}

/** GraphQL resolver arguments: `(root, args, context, info)`. */
function graphqlContext(context: ExecutionContext): Record<string, unknown> {
  return (context.getArgByIndex(2) ?? {}) as Record<string, unknown>;
}

/**
 * The object the decision is left on and `clientId` reads `user` from: the HTTP request, the
 * GraphQL context's request, or the WebSocket client.
 */
export function requestOf(context: ExecutionContext): RequestLike {
  switch (transportOf(context)) {
    case 'graphql': {
      const gql = graphqlContext(context);
      const reply = gql.reply as { request?: RequestLike } | undefined;
      return (gql.req ?? gql.request ?? reply?.request ?? gql) as RequestLike;
    }
    case 'ws':
      return context.switchToWs().getClient<RequestLike>();
    default:
      return context.switchToHttp().getRequest<RequestLike>();
  }
}

/** The neutral view the core's key sources read. */
export function requestView(context: ExecutionContext, request: RequestLike): HttpRequestView {
  if (transportOf(context) === 'ws') {
    // socket.io: `socket.handshake`; ws: the upgrade request the gateway kept (see README).
    const handshake = (request.handshake ?? request.upgradeRequest ?? {}) as {
      address?: string;
      headers?: Record<string, string | string[] | undefined>;
      query?: Record<string, unknown>;
    };
    const socket = (request._socket ?? request.conn) as { remoteAddress?: string } | undefined;
    const data = request.data as { user?: unknown } | undefined;
    return {
      ip: handshake.address ?? socket?.remoteAddress,
      headers: handshake.headers ?? {},
      query: handshake.query,
      user: request.user ?? data?.user,
      trustProxy: true,
    };
  }
  return {
    ip: request.ip,
    headers: request.headers ?? {},
    query: request.query,
    user: request.user,
    trustProxy: trustsProxy(request),
    // Express `trust proxy: true`, or a Fastify `trustProxy` that believes every hop: the
    // leftmost X-Forwarded-For entry, which any client forges.
    trustsEveryProxy: trustsEveryProxy(request),
  };
}

function trustsEveryProxy(request: RequestLike): boolean {
  const express = expressOf(request);
  if (express) return express.get('trust proxy') === true;
  return 'raw' in request && trustsEveryHop(request as RequestLike & { raw: unknown });
}

/** The Express application of an Express request (undefined on Fastify). */
function expressOf(request: RequestLike): { get(name: string): unknown } | undefined {
  const app = request.app as { get?: (name: string) => unknown } | undefined;
  return app && typeof app.get === 'function' ? (app as { get(name: string): unknown }) : undefined;
}

/** Where the rate-limit headers go: the HTTP response (also for GraphQL), none for WebSockets. */
export function headerTarget(
  context: ExecutionContext,
  adapterHost: HttpAdapterHost | undefined,
): HeaderTarget | undefined {
  const transport = transportOf(context);
  if (transport === 'ws') return undefined;
  let response: Record<string, unknown> | undefined;
  if (transport === 'graphql') {
    // Apollo on Express: `req.res`; Mercurius: `reply`; a context that names `res` or `reply`.
    const gql = graphqlContext(context);
    const req = gql.req as { res?: unknown } | undefined;
    response = (gql.res ?? gql.reply ?? req?.res) as Record<string, unknown> | undefined;
    if (!response) return undefined;
  } else {
    response = context.switchToHttp().getResponse();
    const adapter = adapterHost?.httpAdapter;
    if (adapter) {
      return {
        get: (name) => adapter.getHeader(response, name),
        set: (name, value) => adapter.setHeader(response, name, value),
        sent: () => adapter.isHeadersSent(response),
      };
    }
  }
  // A Node response, an Express response or a Fastify reply.
  const r = response as {
    getHeader(name: string): string | undefined;
    setHeader?(name: string, value: string): void;
    header?(name: string, value: string): void;
    headersSent?: boolean;
    sent?: boolean;
    raw?: { headersSent?: boolean };
  };
  return {
    sent: () => r.headersSent === true || r.sent === true || r.raw?.headersSent === true,
    get: (name) => r.getHeader(name),
    set: (name, value) => {
      if (typeof r.header === 'function') r.header(name, value);
      else r.setHeader?.(name, value);
    },
  };
}

const connectionIds = new WeakMap<object, number>();
let nextConnection = 0;

/**
 * A key function: the WebSocket connection (`ws:<socket.io id>` or a per-process number for a
 * `ws` client), so each connection has its own budget. `undefined` outside WebSocket contexts,
 * so it can end an array: `key: ['clientId', connectionKey]`.
 */
export function connectionKey(context: ExecutionContext): string | undefined {
  if (transportOf(context) !== 'ws') return undefined;
  const client = context.switchToWs().getClient<{ id?: unknown }>();
  if (client === null || typeof client !== 'object') return undefined;
  if (typeof client.id === 'string' && client.id !== '') return `ws:${client.id}`;
  let id = connectionIds.get(client);
  if (id === undefined) {
    id = ++nextConnection;
    connectionIds.set(client, id);
  }
  return `ws:${process.pid}.${id}`;
}

/**
 * Whether Express or Fastify trusts a proxy, as it resolved `request.ip` (the core warns once
 * when X-Forwarded-For arrives at an app that trusts none). Express keeps a `trust proxy`
 * setting; Fastify does not expose `trustProxy`, but a trusted proxy makes `request.ip` differ
 * from the socket's address.
 */
function trustsProxy(request: RequestLike): boolean {
  const express = expressOf(request);
  if (express) return Boolean(express.get('trust proxy'));
  const raw = request.raw as { socket?: { remoteAddress?: string } } | undefined;
  return raw?.socket !== undefined && request.ip !== raw.socket.remoteAddress;
}
