/**
 * The Redis store: every decision is decided by a script assembled from lua/, which checks
 * every policy of the limiter and then writes all of them or none, atomically, next to the data.
 * Decisions made while an earlier round trip is in flight go out together as one EVALSHA of the
 * script's batch variant (redis-batch.ts); `batch: false` sends one EVALSHA per decision.
 */
import { type Clock, readMicros } from '../clock.js';
import type { StoreDecision } from '../decision.js';
import { RateLimitConfigError } from '../errors.js';
import { sharesOneKey } from '../keys.js';
import { GlobalReader } from '../live-global.js';
import { encodeChange } from '../live-limits.js';
import { configError, readOptions } from '../options.js';
import { type Policy } from '../policy.js';
import { decodeLeaseTake, type LeaseTaken } from './lease-take.js';
import { Batcher, type BatchLimits } from './redis-batch.js';
import { type Handlers, PolicyCalls, size } from './redis-calls.js';
import { clientKind, type ScriptClient, toScriptClient } from './redis-client.js';
import { isNoScript } from './redis-errors.js';
import { functionsClient } from './redis-functions.js';
import { GlobalChannel, GlobalWatch } from './redis-global.js';
import { redisLeases } from './redis-leases.js';
import { LiveReplies } from './redis-live.js';
import { checkMemoryPolicy } from './redis-memory.js';
import {
  REDIS_STORE_OPTION_NAMES,
  type RedisStoreOptions,
  readBatch,
  readScripts,
} from './redis-options.js';
import {
  MODE_BLOCK,
  MODE_CHARGE,
  MODE_LEASE_TAKE,
  MODE_REFUND,
  MODE_RESET,
  MODE_SET,
  MODE_UNBLOCK,
} from './redis-reply.js';
import { afterClockRead, type ClockCheck, storeClock } from './redis-time.js';
import { deleteLimiterKeys } from './reset-all.js';
import {
  algorithmKinds,
  combinedScriptFor,
  type GeneratedScript,
  liveScriptFor,
  nodeBatchScriptFor,
  scriptFor,
} from './scripts.js';
import { abandon, notRunError, SendTicket, TICKET, type TicketedPromise } from './send-ticket.js';
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
    const client = toScriptClient(o.client);
    const functions = readScripts(o.scripts) === 'functions';
    this.client = functions ? functionsClient(client) : client;
    this.connection = o.client as object;
    // The clock probe stays a small EVAL (no library of its own on the server).
    ({ clock: this.clock, check: this.clockCheck } = storeClock(client, o));
    this.ttlSlack = this.clock ? String(INJECTED_CLOCK_TTL_SLACK_MS) : '0';
    // The shims send commands themselves (never through ioredis auto-pipelining), so batching
    // works the same on every client; a cluster batches per slot, and only when asked to.
    this.batch = readBatch(o.batch, this.client.cluster === true);
    if (this.batch?.perNode && (functions || client.nodeOf === undefined)) {
      // A Redis function, like a `#!lua` script, may not touch keys it did not declare.
      throw configError(
        'redisStore.batch',
        o.batch,
        `true, false or { maxDecisions?, maxBytes? } ${functions ? "with scripts: 'functions'" : `on a ${client.description} client`} (per-node batches run EVALSHA scripts on an ioredis or iovalkey Cluster)`,
      );
    }
    const nodeOf = client.nodeOf;
    this.batcher =
      this.batch &&
      new Batcher(
        (script, keys, args, ticket, onResend) => this.runRaw(script, keys, args, ticket, onResend),
        this.batch,
        this.client.cluster === true,
        nodeOf && { nodeOf, nodeScript: nodeBatchScriptFor },
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
    // Live limits: one key per policy, the live variant (lua/include/live.lua; batched too).
    const live = options?.liveLimits === true ? new LiveReplies(policies) : undefined;
    const combined = !live && options?.stateKeys !== 'per-policy' && sharesOneKey(policies);
    const kinds = policies.map((p) => p.kind);
    const script = live
      ? liveScriptFor(kinds)
      : combined
        ? combinedScriptFor(kinds)
        : scriptFor(kinds);
    const calls = new PolicyCalls(this, script, policies, live);
    const watch =
      live && options?.globalKey
        ? this.watchGlobal(policies, options.globalKey, calls, live)
        : undefined;
    // A lease take's reply is its own table (lua/include/engine.lua), never inline in a batch's.
    const leaseTake = {
      decode: (reply: unknown) => decodeLeaseTake(reply, policies.length),
      wrap: calls.handlers.wrap,
    };
    const prepared: PreparedPolicies = {
      ...(live && {
        // As a decision (afterGlobalRead): a change answered by its timeout while the global
        // record was read is never sent afterwards.
        changeLimits: (keys, change) => {
          const spec = encodeChange(policies, change);
          const send = () => calls.change(keys, spec) as Promise<unknown> as Promise<void>;
          const first = watch?.ready();
          return first === undefined ? send() : afterRead(first, send);
        },
      }),
      ...(watch && {
        changeGlobal: (change) => watch.change(policies, change),
        readGlobal: () => watch.inForce(),
        closeLive: () => watch.close(),
      }),
      combined,
      decide: (keys, cost, peek) => calls.decide(keys, cost, peek),
      reserve: (keys, cost, slack) => calls.reserve(keys, cost, slack),
      reset: async (keys) => {
        await calls.call(keys, MODE_RESET, 0, calls.handlers.asReset);
      },
      refund: (keys, cost) => calls.call(keys, MODE_REFUND, cost, calls.handlers.asRead),
      charge: (keys, cost) => calls.call(keys, MODE_CHARGE, cost, calls.handlers.peekOne),
      set: (keys, used) => calls.call(keys, MODE_SET, used, calls.handlers.peekOne),
      take: (keys, want) =>
        calls.call(keys, MODE_LEASE_TAKE, want, leaseTake) as Promise<LeaseTaken>,
      block: async (keys, micros) => {
        await calls.call(keys, MODE_BLOCK, micros, calls.handlers.asReset);
      },
      unblock: async (keys) => {
        await calls.call(keys, MODE_UNBLOCK, 0, calls.handlers.asReset);
      },
      resetAll: async (head, tails) =>
        (await deleteLimiterKeys(this.client, head, tails)) + ((await watch?.remove()) ?? 0),
    };
    return watch ? afterGlobalRead(prepared, watch) : prepared;
  }

  /** The watch of a limiter's override for every key, whose changes reach its calls. */
  private watchGlobal(
    policies: readonly Policy[],
    key: string,
    calls: PolicyCalls,
    live: LiveReplies,
  ): GlobalWatch {
    const channel = GlobalChannel.of(this.connection);
    const clock = this.clock;
    return new GlobalWatch(
      this.client,
      channel,
      key,
      new GlobalReader(policies),
      (g) => {
        if (g) live.holdGlobal(g);
        calls.setGlobal(g?.spec ?? '');
      },
      clock && (() => readMicros(clock)),
      Number(this.ttlSlack),
    );
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
    if (batcher === undefined || batchScript === undefined)
      return this.run(script, keys, args, handlers);
    return batcher.send(
      script,
      batchScript,
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

/**
 * A process decides only once it has read the limiter's override for every key: calls made
 * before that first read wait for it (once per limiter). A waiting call carries a ticket like a
 * sent one: when its caller stops waiting (the limiter's timeout answered), it is never sent,
 * and once sent, abandoning it abandons the command.
 */
function afterGlobalRead(prepared: PreparedPolicies, watch: GlobalWatch): PreparedPolicies {
  const wrapped = { ...prepared };
  for (const name of [
    'decide',
    'reserve',
    'reset',
    'refund',
    'charge',
    'set',
    'take',
    'block',
    'unblock',
  ] as const) {
    const call = prepared[name] as ((...args: never[]) => Promise<unknown>) | undefined;
    if (call === undefined) continue;
    (wrapped as Record<string, unknown>)[name] = (...args: never[]) => {
      const first = watch.ready();
      return first === undefined ? call(...args) : afterRead(first, () => call(...args));
    };
  }
  return wrapped;
}

/** `call` once `first` has settled, unless its ticket was abandoned meanwhile (see above). */
function afterRead<T>(first: Promise<void>, call: () => Promise<T>): TicketedPromise<T> {
  const ticket = new SendTicket();
  const pending: TicketedPromise<T> = first.then(() => {
    if (ticket.abandoned) throw notRunError();
    const sent = call();
    ticket.signal.addEventListener('abort', () => abandon(sent), { once: true });
    return sent;
  });
  pending[TICKET] = ticket;
  return pending;
}
