/**
 * The Redis store: every decision is decided by a script generated from lua/, which checks
 * every policy of the limiter and then writes all of them or none, atomically, next to the data.
 * Decisions made while an earlier round trip is in flight go out together as one EVALSHA of the
 * script's batch variant (redis-batch.ts); `batch: false` sends one EVALSHA per decision.
 */
import { ALGORITHMS } from '../algorithms/index.js';
import { type Clock, readClockOption, readMicros } from '../clock.js';
import type { StoreDecision } from '../decision.js';
import { RateLimitConfigError, RateLimitStoreError } from '../errors.js';
import { sharesOneKey } from '../keys.js';
import { configError, readOptions } from '../options.js';
import { lockoutArg, type Policy } from '../policy.js';
import { Batcher, type Handlers as BatchHandlers, type BatchLimits } from './redis-batch.js';
import { clientKind, type ScriptClient, toScriptClient } from './redis-client.js';
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
import {
  algorithmKinds,
  batchScriptFor,
  combinedScriptFor,
  type GeneratedScript,
  scriptFor,
  withSourceLine,
} from './scripts.js';
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
 * `sentinels`) or `Cluster`, or a node-redis client, cluster (v4+) or sentinel (v5).
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
    this.clock = readClockOption(o.clock, 'redisStore.clock');
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
      if (!algorithmKinds().includes(p.kind)) {
        throw configError(`policies[${i}].kind`, p.kind, 'an algorithm this version knows');
      }
    });
    // Only the algorithms these policies use: one kind runs its own lean script. Several
    // policies whose states are strings share one key per caller (lua/include/combined.lua).
    const combined = options?.stateKeys !== 'per-policy' && sharesOneKey(policies);
    const kinds = policies.map((p) => p.kind);
    const script = combined ? combinedScriptFor(kinds) : scriptFor(kinds);
    const calls = new PolicyCalls(this, script, policies);
    return {
      combined,
      decide: (keys, cost, peek) => calls.decide(keys, cost, peek),
      reserve: (keys, cost, slack) => calls.reserve(keys, cost, slack),
      reset: async (keys) => {
        await calls.call(keys, MODE_RESET, 0, calls.handlers.asReset);
      },
      refund: (keys, cost) => calls.call(keys, MODE_REFUND, cost, calls.handlers.asRead),
      block: async (keys, micros) => {
        await calls.call(keys, MODE_BLOCK, micros, calls.handlers.asReset);
      },
      unblock: async (keys) => {
        await calls.call(keys, MODE_UNBLOCK, 0, calls.handlers.asReset);
      },
    };
  }

  /**
   * Sends one call of `script`: batched as `batchScript` when batching is on, else its own
   * EVALSHA. `argsSize` counts its argument characters for the batch bound.
   */
  send(
    script: GeneratedScript,
    batchScript: GeneratedScript | undefined,
    keys: readonly string[],
    args: readonly string[],
    handlers: Handlers,
    argsSize: number,
  ): Promise<StoreDecision> {
    if (!this.memoryChecked) this.checkMemory(keys[0] ?? '');
    const batcher = this.batcher;
    if (batcher === undefined) return this.run(script, keys, args, handlers);
    return batcher.send(
      script,
      batchScript!,
      keys,
      args,
      argsSize + size(keys),
      handlers,
    ) as Promise<StoreDecision>;
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
      const failed = (error: unknown) => wrap(error, keys) as Promise<StoreDecision>;
      pending = client.evalsha(script.sha1, keys, args, ticket).then(decode, (error: unknown) => {
        if (!String((error as Error)?.message).startsWith('NOSCRIPT')) return failed(error);
        return client.eval(script.source, keys, args, ticket).then(decode, failed);
      });
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
    try {
      return client.evalsha(script.sha1, keys, args, ticket).catch((error: unknown) => {
        if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
        onResend?.();
        return client.eval(script.source, keys, args, ticket);
      });
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

/**
 * The calls of one prepared limiter: its ARGV after the head (each policy's group, then its
 * lockout), encoded once, and the arrays of the common calls (cost 1 with Redis TIME), built once.
 */
class PolicyCalls {
  readonly handlers: ReplyHandlers;
  /** The script's batch variant, when the store batches. */
  private readonly batchScript: GeneratedScript | undefined;
  private readonly policyArgs: string[] = [];
  private readonly policySize: number;
  private readonly consumeOne: readonly string[];
  private readonly peekOne: readonly string[];
  private readonly oneSize: number;

  constructor(
    private readonly store: RedisStore,
    private readonly script: GeneratedScript,
    policies: readonly Policy[],
  ) {
    // Everything after ARGV[4] never changes for this limiter: encode it once.
    for (const p of policies) this.policyArgs.push(p.kind, ...p.params.map((v) => String(v)));
    // The last n ARGV: each policy's lockout (lua/include/engine.lua).
    for (const p of policies) this.policyArgs.push(lockoutArg(p.lockout));
    this.policySize = size(this.policyArgs);
    // With Redis TIME and cost 1 (nearly every call) the whole ARGV is constant: build it once.
    this.consumeOne = [MODE_CONSUME, '', '1', store.ttlSlack, ...this.policyArgs];
    this.peekOne = [MODE_PEEK, '', '1', store.ttlSlack, ...this.policyArgs];
    this.oneSize = size(this.consumeOne);
    this.batchScript = store.batch ? batchScriptFor(script) : undefined;
    this.handlers = new ReplyHandlers(store.client, script, policies, (error, keys, cost) =>
      this.recover(error, keys, cost),
    );
  }

  decide(keys: readonly string[], cost: number, peek: boolean): Promise<StoreDecision> {
    const h = this.handlers;
    if (cost === 1 && !this.store.clock) {
      return peek
        ? this.send(keys, this.peekOne, h.peekOne, this.oneSize)
        : this.send(keys, this.consumeOne, h.costOne, this.oneSize);
    }
    const args = this.head(peek ? MODE_PEEK : MODE_CONSUME, cost);
    return this.send(
      keys,
      [...args, ...this.policyArgs],
      h.forCost(cost, peek),
      size(args) + this.policySize,
    );
  }

  reserve(keys: readonly string[], cost: number, slack: number): Promise<StoreDecision> {
    const args = [...this.head(MODE_RESERVE, cost), String(slack)];
    const handlers = this.handlers.forCost(cost);
    return this.send(keys, [...args, ...this.policyArgs], handlers, size(args) + this.policySize);
  }

  /** A call in `mode` whose ARGV[3] is `cost` (a block's length for MODE_BLOCK). */
  call(keys: readonly string[], mode: string, cost: number, handlers: Handlers) {
    const args = this.head(mode, cost);
    return this.send(keys, [...args, ...this.policyArgs], handlers, size(args) + this.policySize);
  }

  /**
   * A full Redis (maxmemory with noeviction) refuses every write but still runs reads: a
   * charge it refused is asked again as a peek, and a denial stands (an over-limit key stays
   * limited, whatever the failure policy); only a charge that would have been admitted fails,
   * for the failure policy to answer (new keys, mostly). One extra round trip, only then.
   */
  private recover(error: unknown, keys: readonly string[], cost: number): Promise<unknown> {
    const wrap = this.handlers.wrap;
    if (!isOutOfMemory(error)) return wrap(error);
    const args = [...this.head(MODE_PEEK, cost), ...this.policyArgs];
    return this.send(keys, args, this.handlers.forCost(cost, true), size(args)).then(
      (decision) => (decision.admitted ? wrap(error) : decision),
      () => wrap(error),
    );
  }

  private head(mode: string, cost: number): string[] {
    const clock = this.store.clock;
    return [mode, clock ? String(readMicros(clock)) : '', String(cost), this.store.ttlSlack];
  }

  private send(
    keys: readonly string[],
    args: readonly string[],
    handlers: Handlers,
    argsSize: number,
  ): Promise<StoreDecision> {
    return this.store.send(this.script, this.batchScript, keys, args, handlers, argsSize);
  }
}

/**
 * How a prepared limiter reads its replies, made once per limiter rather than per call: one
 * policy whose script packs its reply into one integer is read with the twin's `unpack`; several
 * come as fields or packed values (redis-reply.ts), inline in a batch's reply (redis-batch.ts).
 */
class ReplyHandlers {
  readonly wrap: (error: unknown) => Promise<never>;
  readonly peekOne: Handlers;
  readonly costOne: Handlers;
  readonly asReset: Handlers;
  readonly asRead: Handlers;
  private readonly flat: number | undefined;
  private readonly decodeFor: (cost: number) => (reply: unknown) => StoreDecision;

  constructor(
    client: ScriptClient,
    script: GeneratedScript,
    policies: readonly Policy[],
    private readonly recover: (
      error: unknown,
      keys: readonly string[],
      cost: number,
    ) => Promise<unknown>,
  ) {
    const storeError = (error: unknown): RateLimitStoreError =>
      new RateLimitStoreError(
        `${client.description} failed running the ${script.name} script: ${withSourceLine(script, String((error as Error)?.message ?? error))}`,
        { cause: error, outOfMemory: isOutOfMemory(error) },
      );
    this.wrap = (error) => Promise.reject(storeError(error));
    const n = policies.length;
    const unpack = n === 1 ? ALGORITHMS[policies[0]!.kind]?.unpack : undefined;
    const params = policies[0]!.params;
    // Several policies: each one's packed value, where it sends one, read with its unpack.
    const unpackEach = unpackers(policies);
    this.decodeFor =
      (cost) =>
      (reply): StoreDecision => {
        if (typeof reply === 'number' && unpack !== undefined) {
          const r = unpack(reply, cost, params);
          return { admitted: r.allowed, results: [r] };
        }
        return decodeDecision(reply, unpackEach, cost);
      };
    this.flat = n > 1 ? n : undefined;
    this.peekOne = { decode: this.decodeFor(1), wrap: this.wrap, flat: this.flat };
    this.costOne = this.charge(1);
    this.asReset = { decode: () => NO_DECISION, wrap: this.wrap };
    this.asRead = { decode: this.decodeFor(0), wrap: this.wrap, flat: this.flat };
  }

  /** The handlers of a charge (or, with `peek`, a peek) of `cost`. */
  forCost(cost: number, peek = false): Handlers {
    if (peek) return cost === 1 ? this.peekOne : this.peek(cost);
    return cost === 1 ? this.costOne : this.charge(cost);
  }

  private peek(cost: number): Handlers {
    return { decode: this.decodeFor(cost), wrap: this.wrap, flat: this.flat };
  }

  private charge(cost: number): Handlers {
    return {
      decode: this.decodeFor(cost),
      wrap: (error, keys) => this.recover(error, keys, cost),
      flat: this.flat,
    };
  }
}
