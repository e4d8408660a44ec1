/** The Redis scripts' modes (ARGV[1], lua/include/prelude.lua) and how their replies read. */
import { ALGORITHMS } from '../algorithms/index.js';
import type { StoreDecision, StoreResult } from '../decision.js';
import { RateLimitStoreError } from '../errors.js';
import type { Policy } from '../policy.js';
import { NOT_RUN_REPLY, notRunError } from './send-ticket.js';

export const MODE_CONSUME = '0';
export const MODE_PEEK = '1';
export const MODE_RESET = '2';
export const MODE_RESERVE = '3';
export const MODE_BLOCK = '4';
export const MODE_UNBLOCK = '5';
export const MODE_REFUND = '6';
const FIELDS_PER_POLICY = 5;

/**
 * The Redis script's reply for a blocked key, { 2, by (0: by hand), left µs (−1: for ever) }, as
 * a StoreDecision; undefined for any other reply (lua/include/engine.lua).
 */
function blockedReply(reply: unknown): StoreDecision | undefined {
  if (!Array.isArray(reply) || reply[0] !== 2 || reply.length !== 3) return undefined;
  const blocked = { by: Number(reply[1]) - 1, left: Number(reply[2]) };
  return { admitted: false, results: [], blocked };
}

/** What `run` answers for a reset, whose reply is not a decision. */
export const NO_DECISION: StoreDecision = Object.freeze({ admitted: true, results: [] });

export function decodeDecision(reply: unknown, n: number): StoreDecision {
  const blocked = blockedReply(reply);
  if (blocked !== undefined) return blocked;
  if (!Array.isArray(reply) || reply.length !== 1 + FIELDS_PER_POLICY * n) {
    if (reply === NOT_RUN_REPLY) throw new RateLimitStoreError(notRunError().message);
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

/** One policy's packed value read for the call's cost (its algorithm's `unpack`). */
export type Unpacker = (packed: number, cost: number) => StoreResult;

/**
 * For a limiter of several policies that all have an `unpack`, each one's, bound to its params:
 * the script may then answer { admitted, packed_1 … packed_n } (lua/include/engine.lua).
 */
export function packedUnpackers(policies: readonly Policy[]): Unpacker[] | undefined {
  if (policies.length < 2) return undefined;
  const unpackers: Unpacker[] = [];
  for (const p of policies) {
    const unpack = ALGORITHMS[p.kind]?.unpack;
    if (unpack === undefined) return undefined;
    unpackers.push((packed, cost) => unpack(packed, cost, p.params));
  }
  return unpackers;
}

/**
 * The decision of a packed reply of several policies, or undefined when the reply is another
 * kind (the fields per policy, a block, an error): its length, n + 1, tells it apart from the
 * fields (1 + 5n), and its first element (0 or 1) from a block's (2).
 */
export function decodePacked(
  reply: unknown,
  unpackers: readonly Unpacker[],
  cost: number,
): StoreDecision | undefined {
  const n = unpackers.length;
  if (!Array.isArray(reply) || reply.length !== n + 1 || reply[0] === 2) return undefined;
  const results: StoreResult[] = new Array(n);
  for (let i = 0; i < n; i++) results[i] = unpackers[i]!(Number(reply[i + 1]), cost);
  return { admitted: reply[0] === 1, results };
}
