/**
 * The tiny client interface the Redis store needs — run a script by SHA1, or by text, or a
 * Redis function (FCALL, with FUNCTION LOAD on every primary) — and the
 * shims that adapt ioredis and iovalkey (Redis, Cluster), node-redis (client, cluster) and
 * valkey-glide (redis-client-glide.ts) to it. Clusters route both calls by the first key, so
 * the EVAL fallback reaches the node that said NOSCRIPT.
 */
import { describeValue, RateLimitConfigError } from '../errors.js';
import { clientClosedError, ioredisClosed, nodeRedisBeenReady } from './client-closed.js';
import { type NodeRedisClusterLike, slotRefresher } from './cluster-refresh.js';
import { type FirstReady, ioredisFirstReady, nodeRedisFirstReady } from './first-ready.js';
import { keySlot } from './key-slot.js';
import { type GlideClientLike, glideKind, glideShim, isGlide } from './redis-client-glide.js';
import type { ScriptClient } from './script-client.js';
import { NOT_RUN_REPLY, type SendTicket } from './send-ticket.js';

export type { ScriptClient };

// biome-ignore lint/suspicious/noExplicitAny: the clients' own signatures are wider than any one call
type Fn = (...args: any[]) => Promise<unknown>;

/**
 * An ioredis (v5 or later) `Redis` or `Cluster`, as the store uses it: `new Redis(url)`,
 * `new Cluster(nodes)`. Typed by the members the store calls, so the store's types need no
 * Redis client installed, and a URL string or a missing `{ client }` does not compile.
 */
export interface IoredisClient {
  evalsha: Fn;
  eval: Fn;
  defineCommand(
    name: string,
    definition: { lua: string; numberOfKeys?: number; readOnly?: boolean },
  ): void;
}

/** A node-redis (v4+) client or cluster, as the store uses it: `createClient()`, `createCluster()`. */
export interface NodeRedisClient {
  evalSha: Fn;
  eval: Fn;
}

/** The Redis clients `redisStore({ client })` supports. */
export type RedisClient = IoredisClient | NodeRedisClient | GlideClientLike;

/** The part of an ioredis `Command` (a public export of ioredis) the shim relies on. */
interface IoredisCommand {
  readonly promise: Promise<unknown>;
  toWritable(socket: unknown): string | Buffer;
}
type IoredisCommandClass = new (
  name: string,
  args: unknown[],
  options: { keyPrefix?: string; replyEncoding?: string },
) => IoredisCommand;
interface IoredisLike extends IoredisClient {
  call: Fn;
  sendCommand: (command: IoredisCommand) => Promise<unknown>;
  isCluster?: boolean;
  options?: { keyPrefix?: string };
  /** A Cluster's nodes (`nodes('master')`). */
  nodes?: (role: string) => { call: Fn }[];
  /** A Cluster's slot map: per slot, its master's and replicas' `host:port`. */
  slots?: ReadonlyArray<readonly string[] | undefined>;
}
interface NodeRedisLike extends NodeRedisClient {
  sendCommand: Fn;
  /** false before `connect()` and after `quit()`/`close()` (a node-redis client, not a cluster). */
  isOpen?: boolean;
  /** node-redis 6's `keyPrefix` (its typed commands prefix keys; `sendCommand` does not). */
  _keyPrefix?: unknown;
  masters?: unknown;
  /** A cluster's client for one of its `masters`. */
  nodeClient?: (node: unknown) => { sendCommand: Fn } | Promise<{ sendCommand: Fn }>;
  /** Only a node-redis `createSentinel()` client has it. */
  getSentinelNode?: unknown;
}

function isIoredis(client: object): client is IoredisLike {
  const c = client as Partial<IoredisLike>;
  return (
    typeof c.evalsha === 'function' &&
    typeof c.eval === 'function' &&
    typeof c.sendCommand === 'function' &&
    typeof c.defineCommand === 'function'
  );
}

function isNodeRedis(client: object): client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike>;
  return (
    typeof c.evalSha === 'function' &&
    typeof c.eval === 'function' &&
    typeof c.sendCommand === 'function'
  );
}

/** `ioredis Redis`, `node-redis client`, …: what kind of supported client `value` is, if any. */
export function clientKind(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (isIoredis(value)) return value.isCluster ? 'ioredis Cluster' : 'ioredis Redis';
  if (isNodeRedis(value)) return nodeRedisKind(value);
  if (isGlide(value)) return glideKind(value);
  return undefined;
}

/** Adapts a supported Redis client, or throws RateLimitConfigError naming what it received. */
export function toScriptClient(client: unknown, field = 'redisStore.client'): ScriptClient {
  if (client !== null && typeof client === 'object') {
    if (isIoredis(client)) {
      refuseStringNumbers(client, field);
      const Command = ioredisCommandClass(client);
      if (Command)
        return ioredisShim(client, checkedPrefix(client.options?.keyPrefix, field), Command);
    } else if (isNodeRedis(client)) {
      return nodeRedisShim(client, checkedPrefix(client._keyPrefix, field));
    } else if (isGlide(client)) {
      return glideShim(client);
    }
  }
  throw new RateLimitConfigError(
    'FLOODGATE_UNKNOWN_CLIENT',
    field,
    client,
    `${field} must be an ioredis or iovalkey Redis or Cluster (v5+), a node-redis client, cluster (v4+) or sentinel (v5+), or a valkey-glide client or cluster client, got ${describeValue(client)}`,
  );
}

/**
 * An ioredis client made with `stringNumbers: true` answers every integer as text, so every
 * script reply would read as a store error and the failure policy would answer every call
 * (`'open'` admitting everything): refused here, with the way out.
 */
function refuseStringNumbers(client: IoredisLike, field: string): void {
  const options = client.options as
    | { stringNumbers?: unknown; redisOptions?: { stringNumbers?: unknown } }
    | undefined;
  if (options?.stringNumbers !== true && options?.redisOptions?.stringNumbers !== true) return;
  throw new RateLimitConfigError(
    'FLOODGATE_INVALID_OPTION',
    field,
    client,
    `${field} is an ioredis client created with stringNumbers: true, which answers every number as text: the store could read none of its replies, and its failure policy would answer every call. Give the store a client without it, e.g. redisStore({ client: client.duplicate({ stringNumbers: false }) })`,
  );
}

/**
 * A client's key prefix (ioredis `keyPrefix`, node-redis 6 `keyPrefix`), which the shims put
 * before every key as the client would. Every key of a call shares one hash tag, which the
 * store also uses to batch calls per cluster slot; a prefix with `{` or `}` would move or split
 * that tag, so it is refused.
 */
function checkedPrefix(prefix: unknown, field: string): string {
  if (prefix === undefined || prefix === null || prefix === '') return '';
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw new RateLimitConfigError(
      'FLOODGATE_INVALID_OPTION',
      `${field}.keyPrefix`,
      prefix,
      `${field}.keyPrefix must be a string without "{" or "}" (every key of a rate-limit call must keep its own hash tag, {floodgate:…}), got ${describeValue(prefix)}: leave the braces out, or use the limiter's \`prefix\` option`,
    );
  }
  return prefix;
}

/**
 * ioredis re-sends a command by writing the same `Command` object again (after a reconnect, or
 * to another cluster node when its connection closed). The shim's commands know whether they
 * may run: the first write runs; a later write runs only when the first attempt was answered
 * on a connection that is still open (a MOVED/ASK/TRYAGAIN redirection, which never runs the
 * script); any other re-send, and any write after the caller abandoned the command (it sat in
 * the offline queue past the timeout), is an ECHO instead. Commands go out through
 * `sendCommand`, so a Cluster routes them by their first key's slot (auto-pipelining, which
 * groups EVALSHA by the SHA1 and breaks multi-slot batches, is bypassed; it slows Lua-based
 * limiters anyway: docs/benchmarks.md).
 */
function ioredisShim(
  client: IoredisLike,
  keyPrefix: string,
  Command: IoredisCommandClass,
): ScriptClient {
  class SendOnceCommand extends Command {
    private firstSocket: { readonly destroyed?: boolean } | undefined;
    constructor(
      name: string,
      args: unknown[],
      private readonly ticket: SendTicket | undefined,
    ) {
      // utf8: strings (an error inside a batch reply, NOT_RUN_REPLY) arrive as strings, not Buffers.
      super(name, args, { keyPrefix, replyEncoding: 'utf8' });
    }
    override toWritable(socket: unknown): string | Buffer {
      if (this.ticket?.abandoned) return NOT_RUN_COMMAND;
      const first = this.firstSocket;
      if (first !== undefined && first.destroyed !== false) return NOT_RUN_COMMAND;
      this.firstSocket = socket as { readonly destroyed?: boolean };
      return super.toWritable(socket);
    }
  }
  const gate = ioredisFirstReady(client);
  const description = client.isCluster ? 'ioredis Cluster' : 'ioredis Redis';
  const closed = ioredisClosed(client as { status?: unknown }, description);
  const send = (command: IoredisCommand, ticket: SendTicket | undefined) =>
    (gate
      ? gate.run(() => client.sendCommand(command), ticket)
      : client.sendCommand(command)
    ).catch(closed);
  return {
    description,
    cluster: client.isCluster === true,
    ...(client.isCluster === true &&
      Array.isArray(client.slots) && {
        nodeOf: (key: string) => client.slots?.[keySlot(key)]?.[0],
      }),
    evalsha: (sha1, keys, args, ticket) =>
      send(new SendOnceCommand('evalsha', [sha1, keys.length, ...keys, ...args], ticket), ticket),
    eval: (script, keys, args, ticket) =>
      send(new SendOnceCommand('eval', [script, keys.length, ...keys, ...args], ticket), ticket),
    fcall: (name, keys, args, ticket) =>
      send(new SendOnceCommand('fcall', [name, keys.length, ...keys, ...args], ticket), ticket),
    command: (_key, args) => (gate ? gate.run(() => client.call(...args)) : client.call(...args)),
    everyPrimary: (args) => {
      if (!client.isCluster || !client.nodes)
        return gate ? gate.run(() => client.call(...args)) : client.call(...args);
      return Promise.all(client.nodes('master').map((node) => node.call(...args)));
    },
    scan: (pattern, count) => {
      // SCAN's MATCH is not prefixed by ioredis, and its replies carry the prefix.
      const prefix = keyPrefix ?? '';
      const nodes = client.isCluster && client.nodes ? client.nodes('master') : [client];
      return scanNodes(
        nodes.map((node) => (args: readonly string[]) => node.call(...args)),
        prefix + pattern,
        count,
        (key) => (key.startsWith(prefix) ? key.slice(prefix.length) : key),
      );
    },
  };
}

type SendRaw = (args: readonly string[]) => Promise<unknown>;

/** SCAN every node in turn until its cursor comes back to 0; yields each non-empty page. */
async function* scanNodes(
  nodes: readonly SendRaw[],
  pattern: string,
  count: number,
  unprefix: (key: string) => string = (key) => key,
): AsyncGenerator<string[]> {
  for (const send of nodes) {
    let cursor = '0';
    do {
      const reply = (await send(['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(count)])) as [
        unknown,
        unknown[],
      ];
      cursor = String(reply[0]);
      const keys = reply[1].map((k) => unprefix(String(k)));
      if (keys.length > 0) yield keys;
    } while (cursor !== '0');
  }
}

/** `ECHO floodgate:not-run`, in the Redis protocol: what a command that may not run sends. */
const NOT_RUN_COMMAND = `*2\r\n$4\r\nECHO\r\n$${NOT_RUN_REPLY.length}\r\n${NOT_RUN_REPLY}\r\n`;

/**
 * ioredis's `Command` class, as the client's own version builds it: a command function run
 * against a stand-in `this` hands its Command to `sendCommand`, which keeps it unsent. Works
 * for Redis and Cluster alike, whichever copy of ioredis the application loaded.
 */
function ioredisCommandClass(client: IoredisLike): IoredisCommandClass | undefined {
  let found: IoredisCommandClass | undefined;
  const standIn = {
    options: {},
    sendCommand(command: IoredisCommand) {
      found = command.constructor as IoredisCommandClass;
      return command.promise;
    },
  };
  try {
    void client.evalsha.call(standIn, 'probe', 0);
  } catch {
    return undefined;
  }
  return typeof found?.prototype?.toWritable === 'function' ? found : undefined;
}

function nodeRedisKind(client: NodeRedisLike): string {
  if (client.masters !== undefined) return 'node-redis cluster';
  return typeof client.getSentinelNode === 'function' ? 'node-redis sentinel' : 'node-redis client';
}

/**
 * node-redis never re-sends a command that was written (a dropped connection rejects it), but
 * keeps commands issued while it reconnects in its offline queue; the ticket's AbortSignal
 * takes an abandoned one out of that queue before it is written. Its sentinel client is the
 * exception: it calls the node client again when a command failed on a master that is no longer
 * ready (a dropped connection, as in a failover) or READONLY, and the first run may have
 * happened. The node client reads the options once per write (it copies them), so the options
 * handed to a sentinel give the ticket's signal to the first write and an aborted one to any
 * later write: that command is refused before it is sent, and the failure policy answers it.
 * A cluster refreshes its slot map only on a MOVED reply; see cluster-refresh.ts.
 */
function nodeRedisShim(client: NodeRedisLike, keyPrefix: string): ScriptClient {
  const kind = nodeRedisKind(client);
  const cluster = kind === 'node-redis cluster';
  const sentinel = kind === 'node-redis sentinel';
  const refresh = cluster ? slotRefresher(client as NodeRedisClusterLike) : undefined;
  const gate: FirstReady | undefined = cluster ? undefined : nodeRedisFirstReady(client);
  const refused = notOpen(client, kind, nodeRedisBeenReady(client as object));
  const send = (
    command: 'EVALSHA' | 'EVAL' | 'FCALL',
    body: string,
    given: readonly string[],
    scriptArgs: readonly string[],
    ticket: SendTicket | undefined,
  ) => {
    const keys = keyPrefix ? given.map((key) => keyPrefix + key) : given;
    const args = [command, body, String(keys.length), ...keys, ...scriptArgs];
    return gate ? gate.run(() => sendNow(args, keys, ticket), ticket) : sendNow(args, keys, ticket);
  };
  const sendNow = (args: string[], keys: readonly string[], ticket: SendTicket | undefined) => {
    if (sentinel) return client.sendCommand(false, args, writeOnce(ticket));
    // v5 reads `abortSignal`, v4 `signal`.
    const options = ticket ? { abortSignal: ticket.signal, signal: ticket.signal } : undefined;
    if (!cluster) return client.sendCommand(args, options).catch(refused);
    const reply = client.sendCommand(keys[0], false, args, options);
    reply.catch((error: unknown) => refresh?.(keys[0]!, error));
    return reply;
  };
  return {
    description: kind,
    cluster,
    evalsha: (sha1, keys, args, ticket) => send('EVALSHA', sha1, keys, args, ticket),
    eval: (script, keys, args, ticket) => send('EVAL', script, keys, args, ticket),
    fcall: (name, keys, args, ticket) => send('FCALL', name, keys, args, ticket),
    everyPrimary: (args) => {
      if (cluster) {
        const masters = client.masters as readonly unknown[];
        return Promise.all(
          masters.map(async (master) => (await client.nodeClient!(master)).sendCommand([...args])),
        );
      }
      if (sentinel) return client.sendCommand(false, [...args]);
      return gate ? gate.run(() => client.sendCommand([...args])) : client.sendCommand([...args]);
    },
    command: (key, args) => {
      // The master's settings are the ones that matter (with replicaPoolSize > 0 a read-only
      // command would go to a replica).
      if (sentinel) return client.sendCommand(false, [...args]);
      if (cluster) return client.sendCommand(key, true, [...args]);
      return gate ? gate.run(() => client.sendCommand([...args])) : client.sendCommand([...args]);
    },
    scan: (pattern, count) => {
      let nodes: SendRaw[];
      if (cluster) {
        const masters = client.masters as readonly unknown[];
        nodes = masters.map((master) => async (args: readonly string[]) => {
          const node = await client.nodeClient!(master);
          return node.sendCommand([...args]);
        });
      } else if (sentinel) {
        nodes = [(args) => client.sendCommand(false, [...args])];
      } else {
        nodes = [(args) => client.sendCommand([...args])];
      }
      return scanNodes(nodes, pattern, count);
    },
  };
}

/**
 * A node-redis client that is not open refuses every command with "The client is closed"; the
 * error then says what to do: one never ready was never connected (a setup mistake, not an
 * outage); one that has been ready was closed by the app (client-closed.ts).
 */
function notOpen(
  client: NodeRedisLike,
  description: string,
  beenReady: () => boolean,
): (error: unknown) => never {
  return (error) => {
    if (client.isOpen !== false) throw error;
    if (beenReady()) throw clientClosedError(description, error);
    throw new Error(
      `the node-redis client is not connected: call \`await client.connect()\` before the first decision (or it was closed by quit()/close()): ${(error as Error)?.message ?? error}`,
      { cause: error },
    );
  };
}

/** Command options whose `abortSignal` lets one write through (while the ticket allows it). */
function writeOnce(ticket: SendTicket | undefined): { readonly abortSignal?: AbortSignal } {
  let writes = 0;
  return {
    get abortSignal() {
      writes++;
      return writes === 1 ? ticket?.signal : ALREADY_ABORTED;
    },
  };
}

const ALREADY_ABORTED = AbortSignal.abort();
