/**
 * Gradient2, as Netflix's concurrency-limits `Gradient2Limit`: the limit follows the ratio of a
 * long-term average latency to the latest one. While latency stays near its long-term average
 * the limit grows by `queueSize`; when latency rises (a queue builds) it shrinks, by at most half
 * a step, smoothed.
 *
 *   gradient = clamp(rttTolerance × longRtt / rtt, 0.5, 1)
 *   limit    = limit × (1 − smoothing) + (limit × gradient + queueSize) × smoothing
 *
 * One difference from Netflix's: a sample the limit's own queue may have slowed does not raise
 * longRtt (learnLongRtt), so a sustained overload no longer walks the limit up to maxLimit.
 */
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

/** Gradient2's parameters; the defaults are those of Netflix's `Gradient2Limit`. */
export interface Gradient2Options {
  /** The limit before any sample. @default 20 */
  initialLimit?: number;
  /** The limit never goes below this. @default 20 */
  minLimit?: number;
  /** The limit never goes above this (Netflix: `maxConcurrency`). @default 200 */
  maxLimit?: number;
  /** Share of each new estimate taken into the limit (0.001 to 1). @default 0.2 */
  smoothing?: number;
  /** Requests the limit may grow by per sample while latency stays low. @default 4 */
  queueSize?: number;
  /** Samples in the long-term latency average (an exponential average after 10 samples). @default 600 */
  longWindow?: number;
  /** How much slower than the long-term average a request may be before the limit shrinks (≥ 1). @default 1.5 */
  rttTolerance?: number;
}

/** Netflix `Gradient2Limit` defaults. */
export const GRADIENT2_DEFAULTS = {
  initialLimit: 20,
  minLimit: 20,
  maxLimit: 200,
  smoothing: 0.2,
  queueSize: 4,
  longWindow: 600,
  rttTolerance: 1.5,
} as const;

/** The option names Gradient2 takes (besides the shedder's own). */
export const GRADIENT2_OPTION_NAMES = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'smoothing',
  'queueSize',
  'longWindow',
  'rttTolerance',
] as const;

/** Samples averaged plainly before the long-term average turns exponential (Netflix: 10). */
const WARMUP_SAMPLES = 10;

/**
 * A long-term average: the plain mean of the first WARMUP_SAMPLES samples, then an exponential
 * average with factor 2 / (window + 1), in integers (rounded down). Gradient2's long-term RTT
 * (microseconds), and the requests in flight that RTT was learnt at (thousandths).
 */
export class LongAverage {
  private sum = 0;
  /** Samples taken, counted up to WARMUP_SAMPLES. */
  count = 0;
  value = 0;

  constructor(private readonly window: number) {}

  add(sample: number): number {
    if (this.count < WARMUP_SAMPLES) {
      this.count += 1;
      this.sum += sample;
      this.value = Math.floor(this.sum / this.count);
    } else {
      // value × (1 − f) + sample × f with f = 2 / (window + 1)
      this.value = Math.floor((this.value * (this.window - 1) + sample * 2) / (this.window + 1));
    }
    return this.value;
  }
}

/** The Gradient2 estimator; the limit is kept in thousandths. */
export class Gradient2Limit implements LimitAlgorithm {
  /** The estimate in thousandths of a request. */
  private estimate: number;
  private readonly bounds: LimitBounds;
  /** smoothing and rttTolerance in thousandths. */
  private readonly smoothing: number;
  private readonly tolerance: number;
  private readonly queueSize: number;
  private readonly longRtt: LongAverage;
  /** Requests in flight (thousandths) of the samples that fed longRtt while nothing was refused. */
  private readonly baselineInFlight: LongAverage;

  constructor(o: Record<string, unknown>, where: string) {
    this.bounds = readBounds(o, where, GRADIENT2_DEFAULTS);
    this.smoothing = permilleOption(o.smoothing, `${where}.smoothing`, 200, 1, SCALE);
    this.tolerance = permilleOption(o.rttTolerance, `${where}.rttTolerance`, 1500, SCALE, 100_000);
    this.queueSize = integerOption(o.queueSize, `${where}.queueSize`, 4, 0);
    const longWindow = integerOption(o.longWindow, `${where}.longWindow`, 600);
    this.longRtt = new LongAverage(longWindow);
    this.baselineInFlight = new LongAverage(longWindow);
    this.estimate = this.bounds.initialLimit * SCALE;
  }

  get limit(): number {
    return Math.floor(this.estimate / SCALE);
  }

  /** The long-term average latency in microseconds (for tests and metrics). */
  get longRttMicros(): number {
    return this.longRtt.value;
  }

  /** The requests in flight the long-term RTT was learnt at, while nothing was refused. */
  get baselineInFlightCount(): number {
    return this.baselineInFlight.value / SCALE;
  }

  update({ rtt, inFlight, saturated }: LimitSample): void {
    // Drops are not a signal of their own here (as in Netflix's Gradient2): their latency is.
    const longRtt = this.learnLongRtt(rtt, inFlight, saturated === true);
    // Latency back to normal after a long overload: pull the long-term average down faster
    // than the exponential average would (the gradient below still uses the value before).
    if (longRtt > 2 * rtt) this.longRtt.value = Math.floor((longRtt * 95) / 100);
    // Application-limited (under half the limit in use): nothing learnt about capacity.
    if (inFlight * 2 * SCALE < this.estimate) return;
    const gradient = clamp(Math.floor((this.tolerance * longRtt) / rtt), 500, SCALE);
    const target = Math.floor((this.estimate * gradient) / SCALE) + this.queueSize * SCALE;
    const smoothed = Math.floor(
      (this.estimate * (SCALE - this.smoothing) + target * this.smoothing) / SCALE,
    );
    this.estimate = clamp(smoothed, this.bounds.minLimit * SCALE, this.bounds.maxLimit * SCALE);
  }

  /**
   * Feeds the long-term RTT as Netflix's Gradient2 does, except for a sample the limit's own
   * queue may have slowed: taken while requests were being refused, with more requests in flight
   * than the long-term RTT was learnt at, and slower than it. Such a sample does not raise it.
   * (Netflix's average takes it, follows the queue up, and the gradient returns to 1 at any
   * queue: in a sustained overload the limit then grew by queueSize × smoothing per sample up to
   * maxLimit.) A slower service still shows: at no more requests in flight than the baseline was
   * learnt at, its latency is the service's own, not a queue, and is taken, saturated or not.
   */
  private learnLongRtt(rtt: number, inFlight: number, saturated: boolean): number {
    const queued =
      saturated &&
      this.baselineInFlight.count > 0 &&
      inFlight * SCALE > this.baselineInFlight.value &&
      rtt > this.longRtt.value;
    if (queued) return this.longRtt.value;
    if (!saturated) this.baselineInFlight.add(inFlight * SCALE);
    return this.longRtt.add(rtt);
  }
}
