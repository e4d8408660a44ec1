/**
 * Vegas, as Netflix's concurrency-limits `VegasLimit` (after TCP Vegas): estimates the queue
 * from the latency without load, `queue = ceil(limit × (1 − rttNoLoad / rtt))`, and grows the
 * limit while the queue is short, shrinks it when it is long. `rttNoLoad` is the lowest latency
 * seen, probed afresh every `probeMultiplier × limit` samples (jittered), so it follows a
 * service that became slower for good.
 */
import { configError } from '../options.js';
import {
  clamp,
  integerOption,
  type LimitAlgorithm,
  type LimitBounds,
  type LimitSample,
  permilleOption,
  readBounds,
  SCALE,
} from './limit-algorithm.js';

/** Vegas's parameters; the defaults are those of Netflix's `VegasLimit`. */
export interface VegasOptions {
  /** The limit before any sample. @default 20 */
  initialLimit?: number;
  /** The limit never goes below this. @default 1 */
  minLimit?: number;
  /** The limit never goes above this (Netflix: `maxConcurrency`). @default 1000 */
  maxLimit?: number;
  /** Share of each new estimate taken into the limit (0.001 to 1). @default 1 */
  smoothing?: number;
  /** `rttNoLoad` is probed afresh every `probeMultiplier × limit × jitter` samples. @default 30 */
  probeMultiplier?: number;
  /**
   * Uniform random numbers in [0, 1) for the probe jitter (spreads the probes of a fleet);
   * inject one for a deterministic trace. @default Math.random
   */
  random?: () => number;
}

/** Netflix `VegasLimit` defaults. */
export const VEGAS_DEFAULTS = {
  initialLimit: 20,
  minLimit: 1,
  maxLimit: 1000,
  smoothing: 1,
  probeMultiplier: 30,
} as const;

/** The option names Vegas takes (besides the shedder's own). */
export const VEGAS_OPTION_NAMES = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'smoothing',
  'probeMultiplier',
  'random',
] as const;

/**
 * Netflix's `Log10RootIntFunction`: log10 of the (whole) limit rounded down, at least 1. Vegas's
 * thresholds are multiples of it: threshold = 1×, alpha = 3×, beta = 6×. (Netflix's older
 * `Log10RootFunction` took the square root from 1000 up; its current VegasLimit and the
 * `largeLimitIncrease` test, 10 000 → 10 024, use log10 throughout.)
 */
export function log10Root(limit: number): number {
  // Digits − 1 is log10 rounded down, exactly (no floating-point log at powers of ten).
  return Math.max(1, String(Math.max(1, Math.floor(limit))).length - 1);
}

/** The Vegas estimator; the limit is kept in thousandths. */
export class VegasLimit implements LimitAlgorithm {
  private estimate: number;
  private readonly bounds: LimitBounds;
  private readonly smoothing: number;
  private readonly probeMultiplier: number;
  private readonly random: () => number;
  /** The lowest recent latency in microseconds; 0 before the first sample. */
  private rttNoLoad = 0;
  private probeCount = 0;
  /** The probe jitter in thousandths, in [500, 1000). */
  private probeJitter = 0;

  constructor(o: Record<string, unknown>, where: string) {
    this.bounds = readBounds(o, where, VEGAS_DEFAULTS);
    this.smoothing = permilleOption(o.smoothing, `${where}.smoothing`, SCALE, 1, SCALE);
    this.probeMultiplier = integerOption(o.probeMultiplier, `${where}.probeMultiplier`, 30);
    if (o.random !== undefined && typeof o.random !== 'function') {
      throw configError(`${where}.random`, o.random, 'a function returning numbers in [0, 1)');
    }
    this.random = (o.random as (() => number) | undefined) ?? Math.random;
    this.estimate = this.bounds.initialLimit * SCALE;
    this.resetProbeJitter();
  }

  get limit(): number {
    return Math.floor(this.estimate / SCALE);
  }

  /** The latency without load the queue is estimated against, in microseconds. */
  get rttNoLoadMicros(): number {
    return this.rttNoLoad;
  }

  update({ rtt, inFlight, dropped }: LimitSample): void {
    this.probeCount += 1;
    // Probe: jitter × probeMultiplier × limit ≤ probeCount (all in thousandths, integers).
    if (
      this.probeJitter * this.probeMultiplier * this.estimate <=
      this.probeCount * SCALE * SCALE
    ) {
      this.resetProbeJitter();
      this.probeCount = 0;
      this.rttNoLoad = rtt;
      return;
    }
    if (this.rttNoLoad === 0 || rtt < this.rttNoLoad) {
      this.rttNoLoad = rtt;
      return;
    }
    this.estimate = this.next(rtt, inFlight, dropped);
  }

  /** The queue estimate: ceil(limit × (1 − rttNoLoad / rtt)) in whole requests. */
  queueSize(rtt: number): number {
    const numerator = this.estimate * (rtt - this.rttNoLoad);
    const denominator = rtt * SCALE;
    return Math.floor((numerator + denominator - 1) / denominator);
  }

  private next(rtt: number, inFlight: number, dropped: boolean): number {
    const limit = Math.floor(this.estimate / SCALE);
    const step = log10Root(limit) * SCALE;
    let target: number;
    if (dropped) {
      target = this.estimate - step;
    } else if (inFlight * 2 * SCALE < this.estimate) {
      // Under half the limit in use: no upward drift.
      return this.estimate;
    } else {
      const queue = this.queueSize(rtt);
      const unit = log10Root(limit);
      if (queue <= unit)
        target = this.estimate + 6 * step; // no queue: grow by beta
      else if (queue < 3 * unit)
        target = this.estimate + step; // short queue: grow
      else if (queue > 6 * unit)
        target = this.estimate - step; // long queue: shrink
      else return this.estimate; // between alpha and beta: hold
    }
    const bounded = clamp(target, this.bounds.minLimit * SCALE, this.bounds.maxLimit * SCALE);
    return Math.floor(
      (this.estimate * (SCALE - this.smoothing) + bounded * this.smoothing) / SCALE,
    );
  }

  private resetProbeJitter(): void {
    // Netflix draws the jitter uniformly from [0.5, 1).
    this.probeJitter = 500 + Math.floor(this.random() * 500);
  }
}
