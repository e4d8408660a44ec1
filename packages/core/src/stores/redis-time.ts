/**
 * The Redis store's clock check. Every decision is timed by the store, so a server whose `TIME`
 * is wrong would decide at a wrong moment without a word: Dragonfly answers `TIME` inside
 * scripts with 0, and a failover to a node with a skewed clock moves time backwards. The store
 * reads the time as its scripts see it before its first decision and again every minute, and
 * refuses to decide on a clock that is implausible or went backwards. With `time: 'client'` the
 * app server's clock decides instead, and the check refuses one too far from the store's.
 */
import { type Clock, readClockOption } from '../clock.js';
import { RateLimitStoreError } from '../errors.js';
import type { ScriptClient } from './redis-client.js';
import { readTime, type TimeSource } from './redis-options.js';
import { clockProbeScript } from './scripts.js';

/** No server decides before 2020-01-01: an earlier `TIME` (0 included) is a broken one. */
export const EARLIEST_PLAUSIBLE_MS = Date.UTC(2020, 0, 1);
/** Between two reads of the store's `TIME` (ms): a failover or a changed clock shows up. */
export const CLOCK_CHECK_INTERVAL_MS = 60_000;
/** After a refusal, the next read (ms): decisions resume soon after the clock is fixed. */
export const CLOCK_RECHECK_AFTER_FAILURE_MS = 1_000;
/**
 * Backwards by up to this (ms) is tolerated: cluster nodes' clocks differ by a few ms, and
 * each read may reach another node.
 */
export const BACKWARDS_TOLERANCE_MS = 1_000;
/**
 * The store's clock from its options: an injected `clock` (unchecked: tests, simulations),
 * `time: 'client'` (`Date.now`, checked against the store's TIME), or none (the scripts read
 * TIME, checked as they see it).
 */
export function storeClock(
  client: ScriptClient,
  options: { time?: unknown; maxClockSkew?: unknown; clock?: unknown },
): { clock: Clock | undefined; check: ClockCheck | undefined } {
  const time = readTime(options.time, options.maxClockSkew, options.clock);
  if (time.source === 'client') {
    return { clock: Date.now, check: new ClockCheck(client, 'client', time.maxSkewMs) };
  }
  const clock = readClockOption(options.clock, 'redisStore.clock');
  return { clock, check: clock ? undefined : new ClockCheck(client, 'redis', time.maxSkewMs) };
}

/**
 * `reply`, unless the clock read sent just before its command (answered first on the same
 * connection) refuses the store's clock: then that refusal.
 */
export function afterClockRead<T>(
  clockRead: Promise<void> | undefined,
  reply: Promise<T>,
): Promise<T> {
  if (clockRead === undefined) return reply;
  return reply.then(
    (value) => clockRead.then(() => value),
    (error: unknown) => clockRead.then(() => Promise.reject(error)),
  );
}

/**
 * Checks the store's clock alongside decisions: `ready(key)`, called just before a command is
 * sent, answers `undefined` while the last read is fresh and good, else a promise of a read
 * sent now (ahead of the command, so no round trip is added) or of the refusal in force, which
 * rejects with a misconfigured RateLimitStoreError.
 */
export class ClockCheck {
  private freshUntil = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;
  private refusal: RateLimitStoreError | undefined;
  /** The latest store time read (ms), for the backwards check. */
  private latestMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly client: ScriptClient,
    private readonly source: TimeSource,
    private readonly maxSkewMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  ready(key: string): Promise<void> | undefined {
    if (performance.now() < this.freshUntil) {
      return this.refusal === undefined ? undefined : handled(Promise.reject(this.refusal));
    }
    this.reading ??= handled(
      this.read(key).finally(() => {
        this.reading = undefined;
      }),
    );
    return this.reading;
  }

  private async read(key: string): Promise<void> {
    const sentAt = this.now();
    let reply: unknown;
    try {
      reply =
        this.source === 'redis'
          ? // Time as a script sees it (lua/probes/clock.lua); the key only routes the call.
            await this.client.eval(clockProbeScript().source, [key], [])
          : await this.client.command(key, ['TIME']);
    } catch {
      // No answer says nothing about the clock: the decision goes out and meets the same error.
      return;
    }
    const refusal = this.judge(storeMillis(reply), sentAt, this.now());
    this.refusal = refusal;
    this.freshUntil =
      performance.now() + (refusal ? CLOCK_RECHECK_AFTER_FAILURE_MS : CLOCK_CHECK_INTERVAL_MS);
    if (refusal) throw refusal;
  }

  private judge(
    storeMs: number,
    sentAt: number,
    receivedAt: number,
  ): RateLimitStoreError | undefined {
    const where = `${this.client.description}: the store's TIME`;
    if (!Number.isFinite(storeMs) || storeMs < EARLIEST_PLAUSIBLE_MS) {
      return misconfigured(
        `${where}${this.source === 'redis' ? ' inside a script' : ''} answered ${Number.isFinite(storeMs) ? new Date(storeMs).toISOString() : 'no time'}, before 2020: a server that cannot tell the time in scripts (Dragonfly answers 0) cannot time decisions. Use redisStore({ time: 'client' }) to time them on this server's clock`,
      );
    }
    if (storeMs < this.latestMs - BACKWARDS_TOLERANCE_MS) {
      return misconfigured(
        `${where} went backwards by ${Math.round(this.latestMs - storeMs)} ms (from ${new Date(this.latestMs).toISOString()} to ${new Date(storeMs).toISOString()}): decisions would be timed before earlier ones. Check the Redis nodes' clocks (NTP)`,
      );
    }
    this.latestMs = Math.max(this.latestMs, storeMs);
    if (this.source === 'client') {
      // The store read TIME somewhere between sending and receiving: compare with the middle.
      const skew = Math.abs((sentAt + receivedAt) / 2 - storeMs);
      if (skew > this.maxSkewMs) {
        return misconfigured(
          `${this.client.description}: this server's clock is ${Math.round(skew)} ms away from the store's TIME, more than maxClockSkew (${this.maxSkewMs} ms): with time: 'client' every app server's clock decides, so they must agree. Check this server's clock (NTP)`,
        );
      }
    }
    return undefined;
  }
}

/** `TIME`'s reply, `[seconds, microseconds]` (strings, or numbers from a script), in ms. */
function storeMillis(reply: unknown): number {
  if (!Array.isArray(reply) || reply.length < 2) return Number.NaN;
  const seconds = Number(reply[0]);
  const micros = Number(reply[1]);
  return seconds * 1000 + Math.floor(micros / 1000);
}

/**
 * `promise`, marked as handled: its rejection reaches the decision that waits for it once that
 * decision's own reply is in, which may be after the rejection.
 */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

function misconfigured(message: string): RateLimitStoreError {
  return new RateLimitStoreError(message, { misconfigured: true });
}
