/**
 * The memory store's block states (lockouts and blocks by hand): the twin of the block string
 * in lua/include/blocks.lua, one entry per block key; and the writes a decision makes besides
 * its charge (refunds, a denial that extends its window).
 */
import type { Algorithm, CheckResult, Params } from '../algorithms/algorithm.js';
import type { StoreDecision, StoreResult } from '../decision.js';
import { type Lockout, lockoutLength } from '../policy.js';

interface BlockEntry {
  /** Blocked until (µs); 0: for ever. */
  until: number;
  /** The blocking policy's index + 1; 0: by hand. */
  by: number;
  /** Lockouts in a row; forgotten at `forgetAt`. */
  level: number;
  forgetAt: number;
  /** max(until, forgetAt); Infinity for ever. */
  expiresAt: number;
}

export class BlockTable {
  private readonly blocks = new Map<string, BlockEntry>();

  /** Whether any key may be blocked (the hot path skips the lookup when none is). */
  get empty(): boolean {
    return this.blocks.size === 0;
  }

  /** The answer for a blocked key, or undefined when it is not blocked. */
  blockedAnswer(key: string, now: number): StoreDecision | undefined {
    const block = this.live(key, now);
    if (block === undefined || (block.until !== 0 && block.until <= now)) return undefined;
    return {
      admitted: false,
      results: [],
      blocked: { by: block.by - 1, left: block.until === 0 ? -1 : block.until - now },
    };
  }

  /** Lockouts in a row so far (0 when forgotten or none). */
  level(key: string, now: number): number {
    const block = this.live(key, now);
    return block === undefined || now >= block.forgetAt ? 0 : block.level;
  }

  /** Blocks by hand for `micros` µs (0: for ever), keeping a lockout count in course. */
  blockByHand(key: string, micros: number, now: number): void {
    const previous = this.live(key, now);
    const level = previous === undefined || now >= previous.forgetAt ? 0 : previous.level;
    this.write(key, micros === 0 ? 0 : now + micros, 0, level, previous?.forgetAt ?? 0);
  }

  /** Policy `i` (of the limiter whose block key is `key`) locks the key out: the answer. */
  lockOut(key: string, i: number, lockout: Lockout, now: number): StoreDecision {
    const level = this.level(key, now);
    const length = lockoutLength(lockout, level);
    const until = now + length;
    this.write(key, until, i + 1, level + 1, until + lockout.forgetAfter);
    return { admitted: false, results: [], blocked: { by: i, left: length } };
  }

  delete(key: string): void {
    this.blocks.delete(key);
  }

  /** Deletes every block whose key `matches`; how many. */
  deleteWhere(matches: (key: string) => boolean): number {
    let deleted = 0;
    for (const key of this.blocks.keys()) {
      if (matches(key)) {
        this.blocks.delete(key);
        deleted++;
      }
    }
    return deleted;
  }

  /** Drops expired blocks; how many. */
  sweep(now: number): number {
    let dropped = 0;
    for (const [key, block] of this.blocks) {
      if (block.expiresAt <= now) {
        this.blocks.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  private live(key: string, now: number): BlockEntry | undefined {
    const block = this.blocks.get(key);
    if (block !== undefined && block.expiresAt <= now) {
      this.blocks.delete(key);
      return undefined;
    }
    return block;
  }

  private write(key: string, until: number, by: number, level: number, forgetAt: number): void {
    const expiresAt = until === 0 ? Number.POSITIVE_INFINITY : Math.max(until, forgetAt);
    this.blocks.set(key, { until, by, level, forgetAt, expiresAt });
  }
}

/**
 * The policy whose lockout blocks the key when a consume is denied: the longest lockout among
 * the policies that denied a cost they could admit (the first on a tie), or −1 (as
 * lua/include/engine.lua picks it).
 */
export function longestLockout(
  results: readonly StoreResult[],
  lockouts: readonly (Lockout | undefined)[],
  level: number,
): number {
  let by = -1;
  let longest = -1;
  for (let i = 0; i < results.length; i++) {
    const r = results[i]!;
    const lockout = lockouts[i];
    if (r.allowed || r.retryAfter < 0 || lockout === undefined) continue;
    const length = lockoutLength(lockout, level);
    if (length > longest) {
      by = i;
      longest = length;
    }
  }
  return by;
}

/**
 * Gives back up to `cost` units to every policy's live state (the twins' `refund`), in place;
 * a state back to what a missing key means is dropped.
 */
export function refundStates(
  plan: { readonly algorithms: readonly Algorithm[]; readonly params: readonly Params[] },
  keys: readonly string[],
  cost: number,
  now: number,
  entries: ReadonlyMap<string, { state: unknown; expiresAt: number }>,
  drop: (key: string, entry: never) => void,
): void {
  for (let i = 0; i < plan.algorithms.length; i++) {
    const key = keys[i]!;
    const entry = entries.get(key);
    if (entry === undefined || entry.expiresAt <= now) continue;
    const refunded = plan.algorithms[i]!.refund(entry.state, now, cost, plan.params[i]!);
    if (refunded === 'delete') drop(key, entry as never);
    else if (refunded !== undefined) {
      entry.state = refunded.next;
      entry.expiresAt = now + refunded.ttl;
    }
  }
}

/**
 * Writes a denial's new state in place, as the Lua check does (fixedWindow `extendWindow`: only
 * a current window extends, so its entry exists).
 */
export function extendDenied(
  entry: { state: unknown; expiresAt: number } | undefined,
  r: CheckResult<unknown>,
  now: number,
): void {
  if (r.allowed || r.next === undefined || entry === undefined) return;
  entry.state = r.next;
  entry.expiresAt = now + r.ttl!;
}

/**
 * Takes `cost` from every policy whatever it holds (the twins' forced check, as Lua's mode 7:
 * docs/algorithms.md#debt), in place. A key not in the table is added when `room()` says it
 * fits; a full table keeps what it has (the charge is not refused, and is lost for that key).
 */
export function chargeStates(
  plan: { readonly algorithms: readonly Algorithm[]; readonly params: readonly Params[] },
  keys: readonly string[],
  cost: number,
  now: number,
  entries: Map<string, { state: unknown; expiresAt: number }>,
  room: () => boolean,
): void {
  if (cost === 0) return; // a read: nothing to write, as Lua's mode 7
  for (let i = 0; i < plan.algorithms.length; i++) {
    const key = keys[i]!;
    const entry = entries.get(key);
    const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
    const algorithm = plan.algorithms[i]!;
    const r = algorithm.check(state, now, cost, plan.params[i]!, Number.MAX_SAFE_INTEGER, true);
    if (!r.allowed || r.next === undefined) continue;
    if (entry !== undefined) {
      entry.state = r.next;
      entry.expiresAt = now + r.ttl!;
    } else if (room()) {
      entries.set(key, { state: r.next, expiresAt: now + r.ttl! });
    }
  }
}
