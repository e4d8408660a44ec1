/**
 * The shim that adapts valkey-glide (`GlideClient`, `GlideClusterClient`) to the store's client
 * interface: every command goes through `customCommand`, routed on a cluster to the primary of
 * the call's first key.
 */
import type { ScriptClient } from './script-client.js';
import type { SendTicket } from './send-ticket.js';

// biome-ignore lint/suspicious/noExplicitAny: the client's own signatures are wider than any one call
type Fn = (...args: any[]) => Promise<unknown>;

/** A valkey-glide client or cluster client, as the store uses it. */
export interface GlideClientLike {
  customCommand: Fn;
  invokeScript: Fn;
  close(): void;
}

interface GlideLike extends GlideClientLike {
  /** Only a `GlideClusterClient` has it. */
  fcallWithRoute?: unknown;
}

/** A valkey-glide client: the only client with both `customCommand` and `invokeScript`. */
export function isGlide(client: object): client is GlideClientLike {
  const c = client as Partial<GlideLike>;
  return typeof c.customCommand === 'function' && typeof c.invokeScript === 'function';
}

/** `valkey-glide client` or `valkey-glide cluster`. */
export function glideKind(client: GlideClientLike): string {
  return typeof (client as GlideLike).fcallWithRoute === 'function'
    ? 'valkey-glide cluster'
    : 'valkey-glide client';
}

/**
 * glide reconnects on its own; in the suite's CLIENT KILL and restart tests it never ran a
 * decision twice nor after the failure policy answered it. It has no way to withdraw a command
 * it holds: an abandoned ticket is checked just before the command is handed to the client,
 * which is all the send-once rule can do here. Map replies (CONFIG GET under RESP3) arrive as
 * `[{ key, value }]` and are flattened to the RESP2 shape the store reads.
 */
export function glideShim(client: GlideClientLike): ScriptClient {
  const kind = glideKind(client);
  const cluster = kind === 'valkey-glide cluster';
  const send = (key: string | undefined, args: readonly string[]): Promise<unknown> => {
    if (!cluster || key === undefined) return client.customCommand([...args]);
    return client.customCommand([...args], { route: { type: 'primarySlotKey', key } });
  };
  const script = (
    command: 'EVALSHA' | 'EVAL' | 'FCALL',
    body: string,
    keys: readonly string[],
    args: readonly string[],
    ticket: SendTicket | undefined,
  ): Promise<unknown> => {
    if (ticket?.abandoned) return Promise.reject(new Error('the command was abandoned'));
    return send(keys[0], [command, body, String(keys.length), ...keys, ...args]);
  };
  return {
    description: kind,
    cluster,
    evalsha: (sha1, keys, args, ticket) => script('EVALSHA', sha1, keys, args, ticket),
    eval: (source, keys, args, ticket) => script('EVAL', source, keys, args, ticket),
    fcall: (name, keys, args, ticket) => script('FCALL', name, keys, args, ticket),
    command: (key, args) => send(key, args).then(flattenRecord),
    everyPrimary: (args) =>
      cluster ? client.customCommand([...args], { route: 'allPrimaries' }) : send(undefined, args),
  };
}

/** glide's map reply (`[{ key, value }, …]`) as the flat array a RESP2 client answers. */
function flattenRecord(reply: unknown): unknown {
  if (!Array.isArray(reply) || !reply.every(isEntry)) return reply;
  return reply.flatMap((entry: { key: unknown; value: unknown }) => [entry.key, entry.value]);
}

function isEntry(value: unknown): boolean {
  return value !== null && typeof value === 'object' && 'key' in value && 'value' in value;
}
