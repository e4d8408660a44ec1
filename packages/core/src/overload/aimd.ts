/**
 * AIMD: additive increase, multiplicative decrease (TCP Reno's congestion window), as Netflix's
 * concurrency-limits `AIMDLimit`: +1 while the limit is in use and nothing drops; times
 * `backoffRatio` on a drop or a latency above `timeout`.
 */
import { type Duration, parseDuration } from '../duration.js';
import {
  clamp,
  type LimitAlgorithm,
  type LimitBounds,
  type LimitSample,
  permilleOption,
  readBounds,
  SCALE,
} from './limit-algorithm.js';

/** AIMD's parameters; the defaults are those of Netflix's `AIMDLimit`. */
export interface AimdOptions {
  /** The limit before any sample. @default 20 */
  initialLimit?: number;
  /** The limit never goes below this. @default 20 */
  minLimit?: number;
  /** The limit never goes above this. @default 200 */
  maxLimit?: number;
  /**
   * The limit is multiplied by this on a drop (from 0.5, halving, to 0.999; three decimals at
   * most). @default 0.9
   */
  backoffRatio?: number;
  /** A request slower than this counts as a drop. @default '5s' */
  timeout?: Duration;
}

/** Netflix `AIMDLimit` defaults. */
export const AIMD_DEFAULTS: LimitBounds & { backoffRatio: number; timeout: Duration } = {
  initialLimit: 20,
  minLimit: 20,
  maxLimit: 200,
  backoffRatio: 0.9,
  timeout: '5s',
};

/** The option names AIMD takes (besides the shedder's own). */
export const AIMD_OPTION_NAMES = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'backoffRatio',
  'timeout',
] as const;

/** The AIMD estimator; the limit is a whole number of requests. */
export class AimdLimit implements LimitAlgorithm {
  private current: number;
  private readonly bounds: LimitBounds;
  /** backoffRatio in thousandths. */
  private readonly backoff: number;
  /** timeout in microseconds. */
  private readonly timeoutUs: number;

  constructor(o: Record<string, unknown>, where: string) {
    this.bounds = readBounds(o, where, AIMD_DEFAULTS);
    this.backoff = permilleOption(o.backoffRatio, `${where}.backoffRatio`, 900, 500, 999);
    this.timeoutUs = parseDuration(o.timeout ?? AIMD_DEFAULTS.timeout, `${where}.timeout`);
    this.current = this.bounds.initialLimit;
  }

  get limit(): number {
    return this.current;
  }

  update({ rtt, inFlight, dropped }: LimitSample): void {
    let next = this.current;
    if (dropped || rtt > this.timeoutUs) {
      next = Math.floor((next * this.backoff) / SCALE);
    } else if (inFlight * 2 >= next) {
      // Grow only while at least half the limit is in use: an idle service learns nothing.
      next += 1;
    }
    this.current = clamp(next, this.bounds.minLimit, this.bounds.maxLimit);
  }
}
