/**
 * The Redis store: every decision is decided by a script generated from lua/, which checks
 * every policy of the limiter and then writes all of them or none, atomically, next to the data.
 * Decisions made while an earlier round trip is in flight go out together as one EVALSHA of the
 * script's batch variant (redis-batch.ts); `batch: false` sends one EVALSHA per decision.
 */
import { ALGORITHMS } from '../algorithms/index.js';
import { type Clock, readMicros } from '../clock.js';
import type { StoreDecision } from '../decision.js';
import { RateLimitConfigError, RateLimitStoreError } from '../errors.js';
import { ENGINE_SCRIPT, type GeneratedScript } from '../generated/scripts.js';
import { sharesOneKey } from '../keys.js';
import { configError, readOptions } from '../options.js';
import { lockoutArg, type Policy } from '../policy.js';
import { Batcher, type Handlers as BatchHandlers, type BatchLimits } from './redis-batch.js';
import { clientKind, type ScriptClient, toScriptClient } from './redis-client.js';
import { isNoScript } from './redis-errors.js';
import { redisLeases } from './redis-leases.js';
import { checkMemoryPolicy, isOutOfMemory } from './redis-memory.js';
import { REDIS_STORE_OPTION_NAMES, type RedisStoreOptions, readBatch } from './redis-options.js';
import {
  decodeDecision,
  MODE_BLOCK,
  MODE_CONSUME,
  MODE_PEEK,
  MODE_REFUND,
  MODE_RESERVE,
  MODE_RESET,
  MODE_UNBLOCK,
  NO_DECISION,
  unpackers,
} from './redis-reply.js';
import { afterClockRead, type ClockCheck, storeClock } from './redis-time.js';
import { batchScriptFor, combinedScriptFor, scriptFor } from './scripts.js';
import { SendTicket, TICKET, type TicketedPromise } from './send-ticket.js';
import type { PreparedPolicies, PrepareOptions, Store, StoreLeases } from './store.js';

/**
 * With an injected clock Redis still expires keys on its own clock, so TTLs get this much
 * slack (ms): state that the injected timeline still needs must not vanish because real time
 * ran ahead of it. Every algorithm reads its own time out of the state, so a key that lives a
 * little longer never changes a decision. With Redis TIME there is no slack.
 */
export const INJECTED_CLOCK_TTL_SLACK_MS = 5_000;

/**
 * A store in Redis: each decision is one EVALSHA of the Lua engine, atomic next to the data,
 * timed by Redis `TIME` (one clock for every app server). Takes an ioredis `Redis` (also with
 * `sentinels`) or `Cluster`, a node-redis client, cluster or sentinel (docs/compatibility.md).
 *
 * @example
 * ```ts
 * import { fixedWindow, RateLimiter, redisStore } from '@floodgate/core';
 * import { Redis } from 'ioredis';
 *
 * const store = redisStore({ client: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') });
 * const limiter = new RateLimiter({ store, policies: fixedWindow({ limit: 100, window: '1m' }) });
 * ```
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}

export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly client: ScriptClient;
  /** The client given: stores on one client share one circuit breaker. */
  readonly connection: object;
  /** ConcurrencyLimiter's leases, run by `runRaw` (redis-leases.ts). */
  readonly leases = (): StoreLeases => redisLeases(this);
  /** The injected clock, if any (ConcurrencyLimiter reads it too). */
  readonly clock: Clock | undefined;
  /** Milliseconds added to every TTL: INJECTED_CLOCK_TTL_SLACK_MS with an injected clock. */
  readonly ttlSlack: string;
  /** How decisions are batched, or undefined with `batch: false`. */
  readonly batch: BatchLimits | undefined;
  private readonly batcher: Batcher | undefined;
  /** Reads the store's clock before decisions (none with an injected `clock`): redis-time.ts. */
  private readonly clockCheck: ClockCheck | undefined;

  constructor(options: RedisStoreOptions) {
    const passed = clientKind(options);
    if (passed !== undefined) {
      // `redisStore(client)`: said plainly, rather than "redisStore.options is not an option".
      throw new RateLimitConfigError(
        'FLOODGATE_INVALID_OPTION',
        'redisStore',
        options,
        `redisStore() takes an options object, and was given ${/^[aeiou]/.test(passed) ? 'an' : 'a'} ${passed} itself: write redisStore({ client })`,
      );
    }
    const o = readOptions(options, 'redisStore', REDIS_STORE_OPTION_NAMES);
    this.client = toScriptClient(o.client);
    this.connection = o.client as object;
    ({ clock: this.clock, check: this.clockCheck } = storeClock(this.client, o));
    this.ttlSlack = this.clock ? String(INJECTED_CLOCK_TTL_SLACK_MS) : '0';
    // The shims send commands themselves (never through ioredis auto-pipelining), so batching
    // works the same on every client; a cluster batches per slot, and only when asked to.
    this.batch = readBatch(o.batch, this.client.cluster === true);
    this.batcher =
      this.batch &&
      new Batcher(
        (script, keys, args, ticket, onResend) => this.runRaw(script, keys, args, ticket, onResend),
        this.batch,
        this.client.cluster === true,
      );
  }

  prepare(policies: readonly Policy[], options?: PrepareOptions): PreparedPolicies {
    policies.forEach((p, i) => {
      if (!ENGINE_SCRIPT.algorithms.includes(p.kind)) {
        throw configError(`policies[${i}].kind`, p.kind, 'an algorithm this version knows');
      }
    });
    // Only the algorithms these policies use: one kind runs its own lean script. Several
    // policies whose states are strings share one key per caller (lua/include/combined.lua).
    const combined = options?.stateKeys !== 'per-policy' && sharesOneKey(policies);
    const kinds = policies.map((p) => p.kind);
    const script = combined ? combinedScriptFor(kinds) : scriptFor(kinds);
    // Everything after ARGV[4] never changes for this limiter: encode it once.
    const policyArgs: string[] = [];
    for (const p of policies) policyArgs.push(p.kind, ...p.params.map((v) => String(v)));
    // The last n ARGV: each policy's lockout (lua/include/engine.lua).
    for (const p of policies) policyArgs.push(lockoutArg(p.lockout));
    const n = policies.length;
    // With Redis TIME and cost 1 (nearly every call) the whole ARGV is constant: build it once.
    const consumeOne = [MODE_CONSUME, '', '1', this.ttlSlack, ...policyArgs];
    const peekOne = [MODE_PEEK, '', '1', this.ttlSlack, ...policyArgs];
    // The reply handlers, made once per limiter rather than per call.
    const client = this.client;
    const storeError = (error: unknown): RateLimitStoreError =>
      new RateLimitStoreError(
        `${client.description} failed running the ${script.name} script: ${(error as Error)?.message ?? error}`,
        { cause: error, outOfMemory: isOutOfMemory(error) },
      );
    const wrap = (error: unknown): Promise<never> => Promise.reject(storeError(error));
    // One policy whose script packs its reply into one integer: read it with the twin's unpack.
    const unpack = n === 1 ? ALGORITHMS[policies[0]!.kind]?.unpack : undefined;
    const params = policies[0]!.params;
    // Several policies: each one's packed value, where it sends one, read with its unpack.
    const unpackEach = unpackers(policies);
    const decodeFor =
      (cost: number) =>
      (reply: unknown): StoreDecision => {
        if (typeof reply === 'number' && unpack !== undefined) {
          const r = unpack(reply, cost, params);
          return { admitted: r.allowed, results: [r] };
        }
        return decodeDecision(reply, unpackEach, cost);
      };
    /**
     * A full Redis (maxmemory with noeviction) refuses every write but still runs reads: a
     * charge it refused is asked again as a peek, and a denial stands (an over-limit key stays
     * limited, whatever the failure policy); only a charge that would have been admitted fails,
     * for the failure policy to answer (new keys, mostly). One extra round trip, only then.
     */
    const recoverFor =
      (cost: number, peekHandlers: () => Handlers) =>
      (error: unknown, keys: readonly string[]): Promise<unknown> => {
        if (!isOutOfMemory(error)) return wrap(error);
        const args = [MODE_PEEK, this.clock ? String(readMicros(this.clock)) : '', String(cost)];
        args.push(this.ttlSlack, ...policyArgs);
        return send(keys, args, peekHandlers(), size(args) + size(keys)).then(
          (decision) => (decision.admitted ? wrap(error) : decision),
          () => wrap(error),
        );
      };
    // A decision of several policies comes inline in a batch script's reply (redis-batch.ts).
    const flat = n > 1 ? n : undefined;
    const peekOneHandlers: Handlers = { decode: decodeFor(1), wrap, flat };
    const peekFor = (cost: number): Handlers =>
      cost === 1 ? peekOneHandlers : { decode: decodeFor(cost), wrap, flat };
    const chargeFor = (cost: number): Handlers => ({
      decode: decodeFor(cost),
      wrap: recoverFor(cost, () => peekFor(cost)),
      flat,
    });
    const costOne = chargeFor(1);
    const forCost = (cost: number, peek = false): Handlers =>
      peek ? peekFor(cost) : cost === 1 ? costOne : chargeFor(cost);
    const asReset: Handlers = { decode: () => NO_DECISION, wrap };
    const asRead: Handlers = { decode: decodeFor(0), wrap, flat };
    // One call: batched when batching is on, else its own EVALSHA. `size` counts its argument
    // characters for the batch bound (constant for the prebuilt arrays).
    const batcher = this.batcher;
    const batchScript = batcher && batchScriptFor(script);
    const policySize = size(policyArgs);
    const oneSize = size(consumeOne);
    const send = (
      keys: readonly string[],
      args: readonly string[],
      handlers: Handlers,
      argsSize: number,
    ): Promise<StoreDecision> => {
      if (!this.memoryChecked) this.checkMemory(keys[0] ?? '');
      if (batcher === undefined) return this.run(script, keys, args, handlers);
      return batcher.send(
        script,
        batchScript!,
        keys,
        args,
        argsSize + size(keys),
        handlers,
      ) as Promise<StoreDecision>;
    };
    const head = (mode: string, cost: number): string[] => [
      mode,
      this.clock ? String(readMicros(this.clock)) : '',
      String(cost),
      this.ttlSlack,
    ];
    // A call in `mode` whose ARGV[3] is `cost` (a block's length for MODE_BLOCK).
    const call = (keys: readonly string[], mode: string, cost: number, handlers: Handlers) => {
      const args = head(mode, cost);
      return send(keys, [...args, ...policyArgs], handlers, size(args) + policySize);
    };
    return {
      combined,
      decide: (keys, cost, peek) => {
        if (cost === 1 && !this.clock) {
          return peek
            ? send(keys, peekOne, peekOneHandlers, oneSize)
            : send(keys, consumeOne, costOne, oneSize);
        }
        const args = head(peek ? MODE_PEEK : MODE_CONSUME, cost);
        return send(keys, [...args, ...policyArgs], forCost(cost, peek), size(args) + policySize);
      },
      reserve: (keys, cost, slack) => {
        const args = [...head(MODE_RESERVE, cost), String(slack)];
        return send(keys, [...args, ...policyArgs], forCost(cost), size(args) + policySize);
      },
      reset: async (keys) => {
        await call(keys, MODE_RESET, 0, asReset);
      },
      refund: (keys, cost) => call(keys, MODE_REFUND, cost, asRead),
      block: async (keys, micros) => {
        await call(keys, MODE_BLOCK, micros, asReset);
      },
      unblock: async (keys) => {
        await call(keys, MODE_UNBLOCK, 0, asReset);
      },
    };
  }

  /** Set once Redis's maxmemory settings were read (or cannot be: see redis-memory.ts). */
  private memoryChecked = false;
  private checkMemory(key: string): void {
    this.memoryChecked = true;
    checkMemoryPolicy(this.client, key).then((retry) => {
      if (retry) this.memoryChecked = false;
    });
  }

  /**
   * EVALSHA, decoded; on NOSCRIPT (restart, SCRIPT FLUSH, failover) EVAL (which caches it). The
   * promise carries the command's ticket, which the guard abandons when its timeout answers.
   */
  private run(
    script: GeneratedScript,
    keys: readonly string[],
    args: readonly string[],
    { decode, wrap }: Handlers,
  ): Promise<StoreDecision> {
    const client = this.client;
    const ticket = new SendTicket();
    let pending: TicketedPromise<StoreDecision>;
    try {
      const clockRead = this.clockCheck?.ready(keys[0] ?? '');
      const failed = (error: unknown) => wrap(error, keys) as Promise<StoreDecision>;
      const evalOnNoScript = (error: unknown) =>
        isNoScript(error)
          ? client.eval(script.source, keys, args, ticket).then(decode, failed)
          : failed(error);
      const reply = client.evalsha(script.sha1, keys, args, ticket).then(decode, evalOnNoScript);
      pending = afterClockRead(clockRead, reply);
    } catch (error) {
      // A client that throws instead of rejecting (e.g. a closed node-redis client).
      pending = wrap(error, keys) as Promise<StoreDecision>;
    }
    pending[TICKET] = ticket;
    return pending;
  }

  /**
   * EVALSHA, EVAL on NOSCRIPT (`onResend` called as it is sent), undecoded: batches and leases
   * read the raw reply.
   */
  runRaw(
    script: { readonly sha1: string; readonly source: string },
    keys: readonly string[],
    args: readonly string[],
    ticket: SendTicket,
    onResend?: () => void,
  ): Promise<unknown> {
    const client = this.client;
    const clockRead = this.clockCheck?.ready(keys[0] ?? '');
    try {
      const reply = client.evalsha(script.sha1, keys, args, ticket).catch((error: unknown) => {
        if (!isNoScript(error)) throw error;
        onResend?.();
        return client.eval(script.source, keys, args, ticket);
      });
      return afterClockRead(clockRead, reply);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/** The batcher's handlers (redis-batch.ts), whose decoding answers a StoreDecision. */
interface Handlers extends BatchHandlers {
  decode(reply: unknown): StoreDecision;
}

/** Characters in `strings` (a batch's size bound counts keys and arguments this way). */
function size(strings: readonly string[]): number {
  let n = 0;
  for (const s of strings) n += s.length + 1;
  return n;
}
