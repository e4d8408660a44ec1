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
export const MODE_CHARGE = '7';
export const MODE_SET = '8';
/** A live limits change with carry (lua/include/live.lua). */
export const MODE_CHANGE = 'a';
export const MODE_LEASE_TAKE = '9';
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

/** One policy's packed value read for the call's cost (its algorithm's `unpack`). */
export type Unpacker = (packed: number, cost: number) => StoreResult;

/**
 * Each policy's `unpack` bound to its params (undefined for an algorithm without one), for the
 * packed values of a multi-policy reply (lua/include/engine.lua).
 */
export function unpackers(policies: readonly Policy[]): (Unpacker | undefined)[] {
  return policies.map((p) => {
    const unpack = ALGORITHMS[p.kind]?.unpack;
    if (unpack === undefined) return undefined;
    const params = p.params;
    return (packed: number, cost: number) => unpack(packed, cost, params);
  });
}

function unexpected(reply: unknown): never {
  if (reply === NOT_RUN_REPLY) throw new RateLimitStoreError(notRunError().message);
  throw new RateLimitStoreError(
    `unexpected reply from the rate-limit script: ${JSON.stringify(reply)}`,
  );
}

/**
 * How many elements a decision of `n` policies takes in a batch script's flat reply, read from
 * its first, `head` (admitted + 4 · packed_mask): one, then one per packed policy and five per
 * other (lua/include/batch.lua). 1 for a head that is not a decision's (decoding it then fails).
 */
export function flatWidth(head: number, n: number): number {
  if (!Number.isSafeInteger(head) || head < 0 || head % 4 > 1) return 1;
  let mask = Math.floor(head / 4);
  let width = 1;
  for (let i = 0; i < n; i++) {
    const bit = mask % 2;
    width += bit === 1 ? 1 : FIELDS_PER_POLICY;
    mask = (mask - bit) / 2;
  }
  return width;
}

/**
 * Each call's reply from a batch script's (lua/include/batch.lua): one element, or for a call
 * whose `flats` entry gives its number of policies and whose reply starts with a number, that
 * decision's elements as one array. undefined when the reply does not split into exactly one
 * answer per call.
 */
export function splitBatchReply(
  reply: readonly unknown[],
  flats: readonly (number | undefined)[],
): unknown[] | undefined {
  const answers: unknown[] = new Array(flats.length);
  let at = 0;
  for (let i = 0; i < flats.length; i++) {
    if (at >= reply.length) return undefined;
    const first = reply[at];
    const n = flats[i];
    if (n !== undefined && typeof first === 'number') {
      const width = flatWidth(first, n);
      answers[i] = reply.slice(at, at + width);
      at += width;
    } else {
      answers[i] = first;
      at += 1;
    }
  }
  return at === reply.length ? answers : undefined;
}

/**
 * A decision's table reply (lua/include/engine.lua): { admitted + 4 · packed_mask, then per
 * policy i its packed value when bit i of packed_mask is set (read with `unpack[i]` for the
 * call's `cost`), else its five fields }; a block's { 2, by, left }.
 */
export function decodeDecision(
  reply: unknown,
  unpack: readonly (Unpacker | undefined)[],
  cost: number,
): StoreDecision {
  const blocked = blockedReply(reply);
  if (blocked !== undefined) return blocked;
  if (!Array.isArray(reply)) unexpected(reply);
  const n = unpack.length;
  const head = Number(reply[0]);
  let mask = Math.floor(head / 4);
  const results: StoreResult[] = new Array(n);
  let j = 1;
  for (let i = 0; i < n; i++) {
    const bit = mask % 2;
    mask = (mask - bit) / 2;
    const read = unpack[i];
    if (bit === 1 && read !== undefined) {
      results[i] = read(Number(reply[j]), cost);
      j += 1;
      continue;
    }
    if (bit === 1) unexpected(reply);
    results[i] = {
      allowed: reply[j] === 1,
      remaining: Number(reply[j + 1]),
      resetAfter: Number(reply[j + 2]),
      retryAfter: Number(reply[j + 3]),
      delay: Number(reply[j + 4]),
    };
    j += FIELDS_PER_POLICY;
  }
  if (j !== reply.length || mask !== 0 || head % 4 > 1) unexpected(reply);
  return { admitted: head % 4 === 1, results };
}
