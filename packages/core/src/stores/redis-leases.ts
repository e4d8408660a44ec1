/**
 * Leases on Redis: lua/leases/ run through the store's own script runner, so the lease path
 * gets every client shim the decisions get (EVALSHA with the NOSCRIPT fallback, cluster
 * routing, send tickets: a lease command abandoned by the limiter's timeout never runs later
 * and never takes a slot nobody holds) and the limiter's StoreGuard bounds each call.
 */
import { type Clock, readMicros } from '../clock.js';
import { RateLimitStoreError } from '../errors.js';
import { type GeneratedScript, leaseScript, withSourceLine } from './scripts.js';
import {
  NOT_RUN_REPLY,
  notRunError,
  SendTicket,
  TICKET,
  type TicketedPromise,
} from './send-ticket.js';
import type { LeaseAnswer, StoreLeases } from './store.js';

/** What the leases need from a Redis store: its script runner, its clock and its TTL slack. */
export interface LeaseScriptRunner {
  /** The client, named in errors. */
  readonly client: { readonly description: string };
  /** The injected clock, or undefined for Redis TIME. */
  readonly clock: Clock | undefined;
  /** The prelude's TTL pad, as the store passes it to its own scripts. */
  readonly ttlSlack: string;
  /** EVALSHA, EVAL on NOSCRIPT, undecoded (RedisStore.runRaw). */
  runRaw(
    script: { readonly sha1: string; readonly source: string },
    keys: readonly string[],
    args: readonly string[],
    ticket: SendTicket,
  ): Promise<unknown>;
}

/** ConcurrencyLimiter's leases on Redis, run by `store`'s script runner. */
export function redisLeases(store: LeaseScriptRunner): StoreLeases {
  const clock = store.clock;
  // The prelude's ARGV: mode, now ('' = Redis TIME), cost, TTL pad.
  const head = (): string[] => ['0', clock ? String(readMicros(clock)) : '', '1', store.ttlSlack];
  /** One script call, decoded, its promise carrying the command's ticket (for the guard). */
  const run = <T>(
    script: GeneratedScript,
    key: string,
    args: string[],
    decode: (reply: unknown) => T,
  ): Promise<T> => {
    const ticket = new SendTicket();
    const fail = (error: unknown): never => {
      throw new RateLimitStoreError(
        `${store.client.description} failed running the ${script.name} script: ${withSourceLine(script, String((error as Error)?.message ?? error))}`,
        { cause: error },
      );
    };
    const pending: TicketedPromise<T> = store
      .runRaw(script, [key], [...head(), ...args], ticket)
      .then((reply) => {
        if (reply === NOT_RUN_REPLY) throw notRunError();
        return decode(reply);
      })
      .catch(fail);
    pending[TICKET] = ticket;
    return pending;
  };
  return {
    local: false,
    acquire: (key, limit, ttl, id) =>
      run(leaseScript('acquire'), key, [String(limit), String(ttl), id], decodeAcquire),
    release: (key, id) => run(leaseScript('release'), key, [id], (reply) => reply === 1),
    renew: (key, ttl, id) =>
      run(leaseScript('renew'), key, [String(ttl), id], (reply) => reply === 1),
    reset: (key) => run(leaseScript('reset'), key, [], () => undefined),
  };
}

function decodeAcquire(reply: unknown): LeaseAnswer {
  if (!Array.isArray(reply) || reply.length !== 4) {
    throw new RateLimitStoreError(`unexpected reply from lease-acquire: ${JSON.stringify(reply)}`);
  }
  const [allowed, remaining, resetAfter, retryAfter] = reply.map(Number);
  return {
    allowed: allowed === 1,
    remaining: remaining!,
    resetAfter: resetAfter!,
    retryAfter: retryAfter!,
  };
}
