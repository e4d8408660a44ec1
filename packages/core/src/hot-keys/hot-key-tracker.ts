/**
 * What a RateLimiter knows about its keys, in fixed memory: which keys take the most of its
 * traffic (`limiter.hotKeys()`) and which are denied the most (`limiter.deniedKeys()`), each a
 * decaying Space-Saving sketch (space-saving.ts). The `hotKeys` option and its reader live here
 * too, so the limiter only holds a tracker and calls `record` once per decision.
 */
import { type Clock, readClockOption } from '../clock.js';
import type { Decision } from '../decision.js';
import { type Duration, parseDuration } from '../duration.js';
import { emitWarning, RateLimitArgumentError } from '../errors.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type HotKey, SpaceSaving } from './space-saving.js';

/** The `hotKeys` option of a RateLimiter: `false` turns the sketches off. */
export interface HotKeysOptions {
  /**
   * Keys tracked by the traffic sketch; the denials sketch tracks half as many. Any key above
   * 1 / capacity of the decisions (2 / capacity of the denials) is guaranteed to be tracked.
   * Memory grows with it: at most ~45 KiB per limiter at 128 with keys of 128 characters or
   * more, ~62 KiB with two-byte characters (docs/benchmarks.md#hot-key-detection).
   * @default 128
   */
  capacity?: number;
  /**
   * A key is hot when it takes at least this fraction of the limiter's recent decisions.
   * @default 0.05
   */
  share?: number;
  /**
   * How fast old traffic is forgotten: every count is halved each `halfLife` (whole
   * milliseconds), so the figures describe roughly the last 5 half-lives.
   * @default '200ms'
   */
  halfLife?: Duration;
  /**
   * Milliseconds (fractions allowed) for the sketches' decay. Only tests and simulations need it.
   * @default the process clock
   */
  clock?: Clock;
}

/** @default 10 keys answered by `hotKeys()` and `deniedKeys()`. */
export const DEFAULT_TOP_KEYS = 10;

/** Every option name of HotKeysOptions, checked against the type. */
const HOT_KEYS_OPTION_NAMES = optionNames<HotKeysOptions>({
  capacity: true,
  share: true,
  halfLife: true,
  clock: true,
});

/**
 * Reads the `hotKeys` option (`where` is e.g. `RateLimiter`): `undefined` or `true` give the
 * defaults, `false` turns tracking off (answers undefined).
 */
export function readHotKeysOption(value: unknown, where: string): HotKeyTracker | undefined {
  const field = `${where}.hotKeys`;
  if (value === false) return undefined;
  if (value === undefined || value === true) return new HotKeyTracker({});
  const o = readOptions(value, field, HOT_KEYS_OPTION_NAMES);
  const capacity =
    o.capacity === undefined ? undefined : positiveInteger(o.capacity, `${field}.capacity`);
  const share = o.share;
  if (share !== undefined && !(typeof share === 'number' && share > 0 && share <= 1)) {
    throw configError(`${field}.share`, share, 'a number in (0, 1], e.g. 0.05 for 5 %');
  }
  let halfLife: number | undefined;
  if (o.halfLife !== undefined) {
    halfLife = parseDuration(o.halfLife, `${field}.halfLife`) / 1000;
    if (!Number.isSafeInteger(halfLife)) {
      throw configError(`${field}.halfLife`, o.halfLife, 'a duration of whole milliseconds');
    }
  }
  const clock = readClockOption(o.clock, `${field}.clock`);
  return new HotKeyTracker({
    capacity,
    share: share as number | undefined,
    halfLife,
    now: clock && guardedClock(clock, `${field}.clock`),
  });
}

/**
 * A user's clock as the sketches call it, after every decision: a throw or a reading that is not
 * a finite number never reaches the decision. It is reported once (FLOODGATE_HOOK_ERROR) and the
 * last good reading answers, so the sketches' time stands still rather than jumping.
 */
function guardedClock(clock: Clock, field: string): Clock {
  let last = clock();
  let warned = false;
  return () => {
    let reading: unknown;
    try {
      reading = clock();
    } catch (error) {
      reading = error;
    }
    if (typeof reading === 'number' && Number.isFinite(reading)) {
      last = reading;
      return reading;
    }
    if (!warned) {
      warned = true;
      emitWarning(
        'FLOODGATE_HOOK_ERROR',
        `${field} threw or returned ${String((reading as Error)?.message ?? reading)}; the hot-key sketches keep its last reading (further errors are ignored)`,
      );
    }
    return last;
  };
}

/** Reads the `n` of `hotKeys(n)` / `deniedKeys(n)`: a non-negative integer, default 10. */
export function readTopCount(n: unknown): number {
  if (n === undefined) return DEFAULT_TOP_KEYS;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new RateLimitArgumentError('n', n, `n must be a non-negative integer, got ${String(n)}`);
  }
  return n;
}

/** The two sketches of one limiter. */
export class HotKeyTracker {
  /** Every decision `consume` (or `acquire`) made, by key. */
  readonly traffic: SpaceSaving;
  /** Every decision that refused the key on its limits (a policy, a block or a ban), by key. */
  readonly denied: SpaceSaving;

  constructor(options: {
    capacity?: number | undefined;
    share?: number | undefined;
    halfLife?: number | undefined;
    now?: Clock | undefined;
  }) {
    const settings = {
      ...(options.capacity !== undefined && { capacity: options.capacity }),
      ...(options.share !== undefined && { share: options.share }),
      ...(options.halfLife !== undefined && { halfLife: options.halfLife }),
      ...(options.now !== undefined && { now: options.now }),
    };
    this.traffic = new SpaceSaving(settings);
    // "Who is being limited" reads the top few: half the counters keep a limiter under 64 KiB.
    this.denied = new SpaceSaving({
      ...settings,
      capacity: Math.max(1, Math.floor(this.traffic.capacity / 2)),
    });
  }

  /**
   * Counts one decision of `key` and answers whether the key is hot now. Reads (`peek`) are not
   * traffic. A denial counts as limited when the key's own limits refused it, not when a store
   * failure did (`onStoreError: 'closed'`).
   */
  record(key: string, decision: Decision, peek: boolean): boolean {
    if (peek) return false;
    if (!decision.allowed && isLimited(decision)) this.denied.observe(key);
    return this.traffic.observe(key);
  }
}

/** A denial by the key's limits: a policy (no reason), a block, a ban, or the fallback's policies. */
function isLimited(decision: Decision): boolean {
  const reason = decision.reason;
  return (
    reason === undefined || reason === 'blocked' || reason === 'banned' || reason === 'fallback'
  );
}

export type { HotKey };
