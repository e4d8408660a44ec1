/** The tiny client interface the Redis store runs its scripts through; the shims adapt each client to it. */
import type { SendTicket } from './send-ticket.js';

/** What the Redis store needs of a client: run a script by SHA1 or by text, and a few commands. */
export interface ScriptClient {
  /** e.g. `ioredis Redis`, `node-redis cluster`. */
  readonly description: string;
  /** A cluster client: every call's keys must share a slot (batches are made per slot). */
  readonly cluster?: boolean;
  /**
   * A cluster client that can say which master serves a key's slot now (its slot map): the
   * store's `batch: 'node'` groups calls by it.
   */
  nodeOf?(key: string): string | undefined;
  /**
   * EVALSHA. With a `ticket`, the command runs at most once, and not at all once the ticket is
   * abandoned (see send-ticket.ts): a re-sent or abandoned command answers `NOT_RUN_REPLY`.
   */
  evalsha(
    sha1: string,
    keys: readonly string[],
    args: readonly string[],
    ticket?: SendTicket,
  ): Promise<unknown>;
  /** Any other command (e.g. CONFIG GET), sent to the node that holds `key` on a cluster. */
  command(key: string, args: readonly string[]): Promise<unknown>;
  /**
   * The keys matching a glob `pattern`, by SCAN with COUNT `count` on every master (a cluster's
   * included), one page of keys at a time, as the limiter names them (without an ioredis
   * `keyPrefix`). Delete them with `command(key, ['UNLINK', key])`.
   */
  scan?(pattern: string, count: number): AsyncGenerator<string[]>;
  /** EVAL (which also caches the script), with the same ticket rules as `evalsha`. */
  eval(
    script: string,
    keys: readonly string[],
    args: readonly string[],
    ticket?: SendTicket,
  ): Promise<unknown>;
  /** FCALL of a Redis function, with the same ticket rules as `evalsha`. */
  fcall?(
    name: string,
    keys: readonly string[],
    args: readonly string[],
    ticket?: SendTicket,
  ): Promise<unknown>;
  /**
   * A command sent to every primary the client knows (a cluster's masters; the one server
   * otherwise), e.g. FUNCTION LOAD: resolves once every primary answered.
   */
  everyPrimary?(args: readonly string[]): Promise<unknown>;
}
