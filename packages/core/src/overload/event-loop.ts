/**
 * The event-loop utilization signal: the share of time the event loop was busy over the last
 * interval (`perf_hooks.eventLoopUtilization`). It rises as soon as the process runs out of CPU,
 * before queued requests show up in latency, so a shedder can refuse sheddable and default
 * traffic early. Sampled lazily, when a request asks and the last sample is older than the
 * interval: no timer, nothing keeps the process alive.
 */
import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import { type Duration, parseDuration } from '../duration.js';
import { configError, optionNames, readOptions } from '../options.js';
import type { Criticality } from './criticality.js';
import { permilleOption } from './limit-algorithm.js';

/** When the event loop is too busy for a class of requests. */
export interface EventLoopOptions {
  /** Sheddable requests are refused while utilization is above this (0 to 1). @default 0.85 */
  sheddable?: number;
  /** Default requests are refused while utilization is above this (0 to 1). @default 0.95 */
  default?: number;
  /** How long each utilization sample spans. @default '100ms' */
  interval?: Duration;
}

const EVENT_LOOP_OPTION_NAMES = optionNames<EventLoopOptions>({
  sheddable: true,
  default: true,
  interval: true,
});

/** The utilization thresholds in thousandths, and the sample interval in milliseconds. */
export class EventLoopSignal {
  private readonly sheddable: number;
  private readonly default: number;
  private readonly intervalMs: number;
  private last: EventLoopUtilization = performance.eventLoopUtilization();
  private sampledAt = performance.now();
  /** Utilization over the last complete interval, in thousandths. */
  private current = 0;

  constructor(options: unknown, where: string) {
    const o = readOptions(options, where, EVENT_LOOP_OPTION_NAMES);
    this.sheddable = permilleOption(o.sheddable, `${where}.sheddable`, 850, 0, 1000);
    this.default = permilleOption(o.default, `${where}.default`, 950, 0, 1000);
    if (this.default < this.sheddable) {
      throw configError(
        `${where}.default`,
        o.default,
        `a number >= sheddable (${this.sheddable / 1000})`,
      );
    }
    this.intervalMs = parseDuration(o.interval ?? '100ms', `${where}.interval`) / 1000;
  }

  /** Utilization (0 to 1) over the last complete interval, sampling a new one when due. */
  utilization(): number {
    const now = performance.now();
    if (now - this.sampledAt >= this.intervalMs) {
      const sample = performance.eventLoopUtilization();
      this.current = Math.round(
        performance.eventLoopUtilization(sample, this.last).utilization * 1000,
      );
      this.last = sample;
      this.sampledAt = now;
    }
    return this.current / 1000;
  }

  /** Whether a request of `criticality` is refused at the current utilization. */
  sheds(criticality: Criticality): boolean {
    if (criticality === 'critical') return false;
    const busy = Math.round(this.utilization() * 1000);
    return busy > (criticality === 'sheddable' ? this.sheddable : this.default);
  }
}
