/**
 * One prepared Redis limiter's calls: its encoded ARGV, the calls RedisStore.prepare answers
 * with, the out-of-memory retry, and how its replies are read (redis-reply.ts).
 */
import { ALGORITHMS } from '../algorithms/index.js';
import { type Clock, readMicros } from '../clock.js';
import type { StoreDecision } from '../decision.js';
import { RateLimitStoreError } from '../errors.js';
import { lockoutArg, type Policy } from '../policy.js';
import type { Handlers as BatchHandlers, BatchLimits } from './redis-batch.js';
import type { ScriptClient } from './redis-client.js';
import type { LiveReplies } from './redis-live.js';
import { isOutOfMemory } from './redis-memory.js';
import {
  decodeDecision,
  MODE_CHANGE,
  MODE_CONSUME,
  MODE_PEEK,
  MODE_RESERVE,
  NO_DECISION,
  unpackers,
} from './redis-reply.js';
import { batchScriptFor, type GeneratedScript, withSourceLine } from './scripts.js';

/** What a prepared limiter's calls need from the Redis store (RedisStore fits it). */
export interface PolicyCallSender {
  /** The client, named in errors. */
  readonly client: ScriptClient;
  /** The injected clock, or undefined for Redis TIME. */
  readonly clock: Clock | undefined;
  /** The prelude's TTL pad, as the store passes it to its scripts. */
  readonly ttlSlack: string;
  /** The batch bounds, when the store batches. */
  readonly batch: BatchLimits | undefined;
  /** Sends one call, batched or as its own EVALSHA (RedisStore.send). */
  send(
    script: GeneratedScript,
    batchScript: GeneratedScript | undefined,
    keys: readonly string[],
    args: readonly string[],
    handlers: Handlers,
    argsSize: number,
  ): Promise<StoreDecision>;
}

/** The batcher's handlers (redis-batch.ts), whose decoding answers a StoreDecision. */
export interface Handlers extends BatchHandlers {
  decode(reply: unknown): StoreDecision;
}

/** Characters in `strings` (a batch's size bound counts keys and arguments this way). */
export function size(strings: readonly string[]): number {
  let n = 0;
  for (const s of strings) n += s.length + 1;
  return n;
}

/**
 * The calls of one prepared limiter: its ARGV after the head (each policy's group, then its
 * lockout), encoded once, and the arrays of the common calls (cost 1 with Redis TIME), built once.
 */
export class PolicyCalls {
  readonly handlers: ReplyHandlers;
  /** The script's batch variant, when the store batches. */
  private readonly batchScript: GeneratedScript | undefined;
  private readonly policyArgs: string[] = [];
  private policySize: number;
  private consumeOne: readonly string[];
  private peekOne: readonly string[];
  private readonly live: boolean;
  private oneSize: number;

  constructor(
    private readonly store: PolicyCallSender,
    private readonly script: GeneratedScript,
    policies: readonly Policy[],
    /** Live limits (lua/include/live.lua): how replies answered with overrides read. */
    live?: LiveReplies,
  ) {
    // Everything after ARGV[4] never changes for this limiter: encode it once.
    for (const p of policies) this.policyArgs.push(p.kind, ...p.params.map((v) => String(v)));
    // The last n ARGV: each policy's lockout (lua/include/engine.lua).
    for (const p of policies) this.policyArgs.push(lockoutArg(p.lockout));
    // A live script's last two ARGV: '' but for a change (changeLimits), and the override for
    // every key this process holds ('' for none: setGlobal).
    this.live = live !== undefined;
    if (live) this.policyArgs.push('', '');
    this.policySize = size(this.policyArgs);
    // With Redis TIME and cost 1 (nearly every call) the whole ARGV is constant: build it once.
    this.consumeOne = [MODE_CONSUME, '', '1', store.ttlSlack, ...this.policyArgs];
    this.peekOne = [MODE_PEEK, '', '1', store.ttlSlack, ...this.policyArgs];
    this.oneSize = size(this.consumeOne);
    // A live script's batch decides the calls whose keys have no live state (lua/include/batch.lua).
    this.batchScript = store.batch ? batchScriptFor(script) : undefined;
    this.handlers = new ReplyHandlers(
      store.client,
      script,
      policies,
      (error, keys, cost) => this.recover(error, keys, cost),
      live,
    );
  }

  /** A live limits change (MODE_CHANGE): `spec` as lua/include/live.lua reads it. */
  change(keys: readonly string[], spec: string): Promise<StoreDecision> {
    const global = this.policyArgs[this.policyArgs.length - 1]!;
    const args = [...this.head(MODE_CHANGE, 0), ...this.policyArgs.slice(0, -2), spec, global];
    // Never batched: a live batch's calls carry no change (lua/include/batch.lua).
    return this.store.send(this.script, undefined, keys, args, this.handlers.asReset, size(args));
  }

  /** The override for every key the live script's calls send from now on ('' for none). */
  setGlobal(spec: string): void {
    if (!this.live) return;
    this.policyArgs[this.policyArgs.length - 1] = spec;
    this.consumeOne = [MODE_CONSUME, '', '1', this.store.ttlSlack, ...this.policyArgs];
    this.peekOne = [MODE_PEEK, '', '1', this.store.ttlSlack, ...this.policyArgs];
    this.oneSize = size(this.consumeOne);
    this.policySize = size(this.policyArgs);
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
    live?: LiveReplies,
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
    const plain =
      (cost: number) =>
      (reply: unknown): StoreDecision => {
        if (typeof reply === 'number' && unpack !== undefined) {
          const r = unpack(reply, cost, params);
          return { admitted: r.allowed, results: [r] };
        }
        return decodeDecision(reply, unpackEach, cost);
      };
    this.decodeFor = live ? (cost) => live.decoder(plain(cost), cost) : plain;
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
