/**
 * OpenTelemetry metrics of an adaptive concurrency limit (`adaptiveConcurrency`, or the
 * `limiter` of a `loadShedder`): its current limit and requests in flight as gauges, and the
 * requests it shed, by criticality class and reason.
 */
import type { AdaptiveConcurrency } from '@floodgate/core';
import { configError, readOptions } from '@floodgate/core/http';
import {
  type MeterProvider,
  metrics,
  type ObservableCallback,
  ValueType,
} from '@opentelemetry/api';

/** The instrumentation scope: the same as `floodgateMetrics`' (index.ts imports this file). */
const METER_NAME = '@floodgate/opentelemetry';

/** Instrument names of the overload metrics. */
export const OVERLOAD_METRIC_NAMES = {
  /** Gauge of the adaptive limit, in requests. */
  limit: 'floodgate.overload.limit',
  /** Gauge of the requests admitted and not yet released. */
  inFlight: 'floodgate.overload.in_flight',
  /** Counter of shed requests: `floodgate.criticality`, `floodgate.reason` (`overloaded`, `event-loop`). */
  shed: 'floodgate.overload.shed',
} as const;

export interface OverloadMetricsOptions {
  /**
   * The `floodgate.limiter` attribute on every data point: tells shedders apart. A fixed label.
   * @default the limiter's name (e.g. 'adaptive-gradient2')
   */
  limiter?: string;
  /** @default the global MeterProvider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
}

/** Stops reporting: unsubscribes from the limiter's decisions and removes the gauges' callbacks. */
export type StopOverloadMetrics = () => void;

const OPTION_NAMES = ['limiter', 'meterProvider'] as const;

/**
 * Reports an adaptive concurrency limit's metrics.
 *
 * @example
 * ```ts
 * const shedder = loadShedder({ criticality });
 * overloadMetrics(shedder.limiter, { limiter: 'api' });
 * ```
 */
export function overloadMetrics(
  shedder: AdaptiveConcurrency,
  options: OverloadMetricsOptions = {},
): StopOverloadMetrics {
  const o = readOptions(options, 'overloadMetrics', OPTION_NAMES);
  if (typeof (shedder as Partial<AdaptiveConcurrency> | null)?.subscribe !== 'function') {
    throw configError('overloadMetrics.shedder', shedder, 'an adaptiveConcurrency(...)');
  }
  const label = o.limiter ?? shedder.name;
  if (typeof label !== 'string' || label === '') {
    throw configError('overloadMetrics.limiter', o.limiter, 'a non-empty string');
  }
  if (
    o.meterProvider !== undefined &&
    typeof (o.meterProvider as MeterProvider | null)?.getMeter !== 'function'
  ) {
    throw configError('overloadMetrics.meterProvider', o.meterProvider, 'a MeterProvider');
  }
  const provider = (o.meterProvider as MeterProvider | undefined) ?? metrics.getMeterProvider();
  const meter = provider.getMeter(METER_NAME);
  const attributes = { 'floodgate.limiter': label };
  const limit = meter.createObservableGauge(OVERLOAD_METRIC_NAMES.limit, {
    description: 'Adaptive concurrency limit',
    unit: '{request}',
    valueType: ValueType.INT,
  });
  const inFlight = meter.createObservableGauge(OVERLOAD_METRIC_NAMES.inFlight, {
    description: 'Requests admitted by the adaptive limit and not yet released',
    unit: '{request}',
    valueType: ValueType.INT,
  });
  const shed = meter.createCounter(OVERLOAD_METRIC_NAMES.shed, {
    description: 'Requests shed by the adaptive limit, by criticality class and reason',
    unit: '{request}',
    valueType: ValueType.INT,
  });
  const observeLimit: ObservableCallback = (result) => result.observe(shedder.limit, attributes);
  const observeInFlight: ObservableCallback = (result) =>
    result.observe(shedder.inFlight, attributes);
  limit.addCallback(observeLimit);
  inFlight.addCallback(observeInFlight);
  const unsubscribe = shedder.subscribe((decision) => {
    if (decision.allowed) return;
    shed.add(1, {
      ...attributes,
      'floodgate.criticality': decision.criticality,
      'floodgate.reason': decision.reason ?? 'overloaded',
    });
  });
  return () => {
    unsubscribe();
    limit.removeCallback(observeLimit);
    inFlight.removeCallback(observeInFlight);
  };
}
