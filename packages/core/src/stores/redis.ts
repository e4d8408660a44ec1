/**
 * The Redis store: every decision is one EVALSHA of a script generated from lua/, which checks
 * every policy of the limiter and then writes all of them or none, atomically, next to the data.
 */
import { ALGORITHMS } from '../algorithms/index.js';
import { type Clock, readMicros } from '../clock.js';
import type { StoreDecision, StoreResult } from '../decision.js';
import { RateLimitStoreError } from '../errors.js';
import { ENGINE_SCRIPT, type GeneratedScript } from '../generated/scripts.js';
import { configError, readOptions } from '../options.js';
import type { Policy } from '../policy.js';
import { type ScriptClient, toScriptClient } from './redis-client.js';
import { scriptFor } from './scripts.js';
import type { PreparedPolicies, Store } from './store.js';

export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster`, or a node-redis client or cluster (v4+). */
  client: unknown;
  /**
   * Epoch milliseconds (fractions allowed). Without it the script reads Redis `TIME`, one clock
   * for every app server; inject one only for tests and simulations.
   */
  clock?: Clock;
}

/**
 * With an injected clock Redis still expires keys on its own clock, so TTLs get this much
 * slack (ms): state that the injected timeline still needs must not vanish because real time
 * ran ahead of it. Every algorithm reads its own time out of the state, so a key that lives a
 * little longer never changes a decision. With Redis TIME there is no slack.
 */
export const INJECTED_CLOCK_TTL_SLACK_MS = 5_000;

const MODE_CONSUME = '0';
const MODE_PEEK = '1';
const MODE_RESET = '2';
const MODE_RESERVE = '3';
const MODE_BLOCK = '4';
const MODE_UNBLOCK = '5';
const MODE_REFUND = '6';
/** The first integer of a blocked reply: { 2, by (0: by hand), left µs (−1: for ever) }. */
const BLOCKED = 2;
const FIELDS_PER_POLICY = 5;

export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}

export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly client: ScriptClient;
  /** The injected clock, if any (ConcurrencyLimiter reads it too). */
  readonly clock: Clock | undefined;
  /** Milliseconds added to every TTL: INJECTED_CLOCK_TTL_SLACK_MS with an injected clock. */
  readonly ttlSlack: string;

  constructor(options: RedisStoreOptions) {
    const o = readOptions(options, 'redisStore', ['client', 'clock']);
    this.client = toScriptClient(o.client);
    if (o.clock !== undefined && typeof o.clock !== 'function') {
      throw configError('redisStore.clock', o.clock, 'a function returning epoch milliseconds');
    }
    this.clock = o.clock as Clock | undefined;
    this.ttlSlack = this.clock ? String(INJECTED_CLOCK_TTL_SLACK_MS) : '0';
  }

  prepare(policies: readonly Policy[]): PreparedPolicies {
    policies.forEach((p, i) => {
      if (!ENGINE_SCRIPT.algorithms.includes(p.kind)) {
        throw configError(`policies[${i}].kind`, p.kind, 'an algorithm this version knows');
      }
    });
    // Only the algorithms these policies use: one kind runs its own lean script.
    const script = scriptFor(policies.map((p) => p.kind));
    // Everything after ARGV[4] never changes for this limiter: encode it once.
    const policyArgs: string[] = [];
    for (const p of policies) policyArgs.push(p.kind, ...p.params.map((v) => String(v)));
    // The last n ARGV: each policy's lockout (lua/include/engine.lua).
    for (const p of policies) {
      const l = p.lockout;
      policyArgs.push(
        l === undefined ? '' : `${l.initial}:${String(l.multiplier)}:${l.max}:${l.forgetAfter}`,
      );
    }
    const n = policies.length;
    // With Redis TIME and cost 1 (nearly every call) the whole ARGV is constant: build it once.
    const consumeOne = [MODE_CONSUME, '', '1', this.ttlSlack, ...policyArgs];
    const peekOne = [MODE_PEEK, '', '1', this.ttlSlack, ...policyArgs];
    // The reply handlers, made once per limiter rather than per call.
    const client = this.client;
    const wrap = (error: unknown): never => {
      throw new RateLimitStoreError(
        `${client.description} failed running the ${script.name} script: ${(error as Error)?.message ?? error}`,
        { cause: error },
      );
    };
    // One policy whose script packs its reply into one integer: read it with the twin's unpack.
    const unpack = n === 1 ? ALGORITHMS[policies[0]!.kind]?.unpack : undefined;
    const params = policies[0]!.params;
    const decodeFor =
      (cost: number) =>
      (reply: unknown): StoreDecision => {
        if (typeof reply === 'number' && unpack !== undefined) {
          const r = unpack(reply, cost, params);
          return { admitted: r.allowed, results: [r] };
        }
        return decodeDecision(reply, n);
      };
    const costOne: Handlers = { decode: decodeFor(1), wrap };
    const forCost = (cost: number): Handlers =>
      cost === 1 ? costOne : { decode: decodeFor(cost), wrap };
    const asReset: Handlers = { decode: () => NO_DECISION, wrap };
    const asRead: Handlers = { decode: decodeFor(0), wrap };
    const now = (): string => (this.clock ? String(readMicros(this.clock)) : '');
    return {
      decide: (keys, cost, peek) => {
        if (cost === 1 && !this.clock) {
          return this.run(script, keys, peek ? peekOne : consumeOne, costOne);
        }
        const now = this.clock ? String(readMicros(this.clock)) : '';
        return this.run(
          script,
          keys,
          [peek ? MODE_PEEK : MODE_CONSUME, now, String(cost), this.ttlSlack, ...policyArgs],
          forCost(cost),
        );
      },
      reserve: async (keys, cost, slack) => {
        const now = this.clock ? String(readMicros(this.clock)) : '';
        return this.run(
          script,
          keys,
          [MODE_RESERVE, now, String(cost), this.ttlSlack, String(slack), ...policyArgs],
          forCost(cost),
        );
      },
      reset: async (keys) => {
        await this.run(
          script,
          keys,
          [MODE_RESET, now(), '0', this.ttlSlack, ...policyArgs],
          asReset,
        );
      },
      refund: (keys, cost) =>
        this.run(
          script,
          keys,
          [MODE_REFUND, now(), String(cost), this.ttlSlack, ...policyArgs],
          asRead,
        ),
      block: async (keys, micros) => {
        await this.run(
          script,
          keys,
          [MODE_BLOCK, now(), String(micros), this.ttlSlack, ...policyArgs],
          asReset,
        );
      },
      unblock: async (keys) => {
        await this.run(
          script,
          keys,
          [MODE_UNBLOCK, now(), '0', this.ttlSlack, ...policyArgs],
          asReset,
        );
      },
    };
  }

  /**
   * EVALSHA, decoded; on NOSCRIPT (restart, SCRIPT FLUSH, failover) EVAL, which also caches the
   * script. One `then` on the client's promise: no extra hop on the hot path.
   */
  private run(
    script: GeneratedScript,
    keys: readonly string[],
    args: readonly string[],
    { decode, wrap }: Handlers,
  ): Promise<StoreDecision> {
    const client = this.client;
    try {
      if (client.runScript) return client.runScript(script, keys, args).then(decode, wrap);
      return client.evalsha(script.sha1, keys, args).then(decode, (error: unknown) => {
        if (!String((error as Error)?.message).startsWith('NOSCRIPT')) return wrap(error);
        return client.eval(script.source, keys, args).then(decode, wrap);
      });
    } catch (error) {
      // A client that throws instead of rejecting (e.g. a closed node-redis client).
      return Promise.reject(error).then(decode, wrap);
    }
  }
}

interface Handlers {
  decode(reply: unknown): StoreDecision;
  wrap(error: unknown): never;
}

/** What `run` answers for a reset, whose reply is not a decision. */
const NO_DECISION: StoreDecision = Object.freeze({ admitted: true, results: [] });

function decodeDecision(reply: unknown, n: number): StoreDecision {
  if (Array.isArray(reply) && reply[0] === BLOCKED && reply.length === 3) {
    return {
      admitted: false,
      results: [],
      blocked: { by: Number(reply[1]) - 1, left: Number(reply[2]) },
    };
  }
  if (!Array.isArray(reply) || reply.length !== 1 + FIELDS_PER_POLICY * n) {
    throw new RateLimitStoreError(
      `unexpected reply from the rate-limit script: ${JSON.stringify(reply)}`,
    );
  }
  const results: StoreResult[] = new Array(n);
  for (let i = 0, j = 1; i < n; i++, j += FIELDS_PER_POLICY) {
    results[i] = {
      allowed: reply[j] === 1,
      remaining: Number(reply[j + 1]),
      resetAfter: Number(reply[j + 2]),
      retryAfter: Number(reply[j + 3]),
      delay: Number(reply[j + 4]),
    };
  }
  return { admitted: reply[0] === 1, results };
}
