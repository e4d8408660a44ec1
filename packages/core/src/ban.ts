/**
 * Escalation of repeated denials (@fastify/rate-limit's `ban`): a key denied `after` times
 * within `window` is banned for `duration`, by a block (the limiter's own `block`, so a banned
 * key is refused in the same store call as any decision) and a marker that tells a ban from a
 * lockout. Denials are counted by a fixedWindow of `after − 1` under `<prefix>:ban`.
 */
import { type FixedWindowOptions, fixedWindow } from './algorithms/fixed-window.js';
import type { Decision } from './decision.js';
import { type Duration, parseDuration } from './duration.js';
import { optionNames, positiveInteger, readAs, readOptions } from './options.js';
import type { Policy } from './policy.js';

/** The `ban` option of a RateLimiter. */
export interface BanOptions {
  /** Denials within `window` that ban the key (the `after`-th denial bans it). */
  after: number;
  /** The window denials are counted in (a fixed window from the key's first denial). */
  window: Duration;
  /** How long a ban lasts, or `'forever'` (until `unblock` or `reset`). */
  duration: Duration | 'forever';
}

const BAN_OPTION_NAMES = optionNames<BanOptions>({ after: true, window: true, duration: true });

/** The parsed `ban` option: the counting policy and the ban's length. */
export interface BanConfig {
  /** Counts denials: admits `after − 1`, so the `after`-th is denied. */
  readonly counter: Policy;
  readonly duration: Duration | 'forever';
}

/** Reads `ban` (undefined: no escalation). */
export function readBanOption(value: unknown, where: string): BanConfig | undefined {
  if (value === undefined) return undefined;
  const field = `${where}.ban`;
  const o = readOptions(value, field, BAN_OPTION_NAMES);
  const after = positiveInteger(o.after, `${field}.after`);
  const counting: FixedWindowOptions = {
    limit: after - 1,
    window: o.window as Duration,
    anchor: 'first-request',
    name: 'denials',
  };
  const counter = readAs(counting, field, () => fixedWindow(counting));
  if (o.duration !== 'forever') parseDuration(o.duration, `${field}.duration`);
  return { counter, duration: o.duration as Duration | 'forever' };
}

/** What a Ban asks of limiters: the limiter it guards, and its denial counter. */
export interface BanLimiter {
  consume(key: string): Promise<Decision>;
  peek(key: string, options: { cost: number }): Promise<Decision>;
  block(key: string, duration: Duration | 'forever'): Promise<void>;
  unblock(key: string): Promise<void>;
  reset(key: string): Promise<void>;
  resetAll(): Promise<number>;
}

/** A limiter's ban: judges its decisions, and forgets bans with the limiter's keys. */
export class Ban {
  constructor(
    private readonly config: BanConfig,
    /** The limiter the ban guards. */
    private readonly limiter: BanLimiter,
    /** Counts denials per key; its block is the ban's marker. */
    private readonly counter: BanLimiter,
  ) {}

  /**
   * A blocked decision of a banned key says reason 'banned'. A consume's denial by a policy is
   * counted; the `after`-th within the window bans the key, and answers as the ban. Other
   * decisions (admitted, a peek's, a failure policy's) are left as they are.
   */
  async judge(key: string, decision: Decision, peek: boolean): Promise<Decision> {
    if (decision.allowed) return decision;
    if (decision.reason === 'blocked') {
      const marker = await this.counter.peek(key, { cost: 0 });
      return marker.reason === 'blocked' ? { ...decision, reason: 'banned' } : decision;
    }
    if (peek || decision.reason !== undefined) return decision;
    const count = await this.counter.consume(key);
    // Admitted, or not counted (the counter's store failed and it answered for it): no ban.
    if (count.allowed || count.reason !== undefined) return decision;
    const { duration } = this.config;
    await this.counter.block(key, duration);
    await this.limiter.block(key, duration);
    return { ...(await this.limiter.peek(key, { cost: 0 })), reason: 'banned' };
  }

  /** Lifts a ban with the key's block (`unblock`, `reset`), and forgets its denials. */
  async forget(key: string): Promise<void> {
    await this.counter.reset(key);
  }

  /** Forgets every ban and count (`resetAll`). */
  resetAll(): Promise<number> {
    return this.counter.resetAll();
  }
}
