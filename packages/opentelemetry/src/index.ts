/**
 * @floodgate/opentelemetry — OpenTelemetry metrics for Floodgate limiters, through the
 * RateLimiter hooks: `new RateLimiter({ …, hooks: floodgateMetrics().hooks })`, or the same
 * `hooks` option on any adapter. Attributes are low-cardinality by construction: the limiter's
 * label, the policy name, the outcome and the reason, never the key.
 */
import type {
  CallContext,
  CircuitState,
  Decision,
  RateLimiterHooks,
  StoreCallEvent,
  StoreErrorEvent,
} from '@floodgate/core';
import { configError, HookCaller, readOptions } from '@floodgate/core/http';
import { type Meter, type MeterProvider, metrics, ValueType } from '@opentelemetry/api';

/** The instrumentation scope every instrument is created under. */
export const METER_NAME = '@floodgate/opentelemetry';

/** Instrument names (OpenTelemetry style; the Prometheus exporter writes `_` for `.`). */
export const METRIC_NAMES = {
  /** Counter of decisions: `floodgate.outcome`, `floodgate.policy`, `floodgate.reason`, `floodgate.operation`. */
  decisions: 'floodgate.decisions',
  /** Histogram of store round trips in seconds: `floodgate.store.outcome`. */
  storeDuration: 'floodgate.store.duration',
  /** Counter of failed store calls: `floodgate.failure` (`store-error`, `timeout`). */
  storeErrors: 'floodgate.store.errors',
  /** Gauge of the circuit breaker: 0 closed, 1 half-open, 2 open. */
  circuitState: 'floodgate.circuit.state',
  /** Counter of decisions answered by the local denied-key cache (no store call). */
  deniedCacheHits: 'floodgate.denied_cache.hits',
} as const;

/**
 * How a decision ended, as the `floodgate.outcome` attribute. `shadow-denied`: a middleware in
 * shadow mode (`shadow: true`) would have refused the request (the `floodgate.reason` attribute
 * still says `blocked` for a block), but let it through.
 */
export type DecisionOutcome = 'admitted' | 'denied' | 'blocked' | 'shadow-denied';

/** The circuit state as the gauge reports it. */
export const CIRCUIT_STATE_VALUES: Readonly<Record<CircuitState, number>> = {
  closed: 0,
  'half-open': 1,
  open: 2,
};

/**
 * Store latency buckets in seconds, 50 µs to 2.5 s: a Redis round trip on a LAN is ~0.1–1 ms,
 * and the limiter's default timeout is 1 s.
 */
export const STORE_DURATION_BUCKETS: readonly number[] = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
];

export interface FloodgateMetricsOptions {
  /**
   * The `floodgate.limiter` attribute on every data point: tells limiters apart (one
   * `floodgateMetrics()` per limiter or middleware). A fixed label, never per request.
   * @default 'default'
   */
  limiter?: string;
  /** @default the global MeterProvider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
  /** Your own hooks: called as well, after the metrics are recorded. */
  hooks?: RateLimiterHooks;
}

export interface FloodgateMetrics {
  /** Pass as the `hooks` option of a RateLimiter or an adapter. */
  readonly hooks: RateLimiterHooks;
}

const OPTION_NAMES = ['limiter', 'meterProvider', 'hooks'] as const;

/**
 * Builds the metrics hooks for one limiter.
 *
 * @example
 * const telemetry = floodgateMetrics({ limiter: 'api' });
 * app.use(rateLimit({ store, policies, hooks: telemetry.hooks }));
 */
export function floodgateMetrics(options: FloodgateMetricsOptions = {}): FloodgateMetrics {
  const o = readOptions(options, 'floodgateMetrics', OPTION_NAMES);
  const limiter = o.limiter ?? 'default';
  if (typeof limiter !== 'string' || limiter === '') {
    throw configError('floodgateMetrics.limiter', o.limiter, 'a non-empty string');
  }
  if (
    o.meterProvider !== undefined &&
    typeof (o.meterProvider as MeterProvider | null)?.getMeter !== 'function'
  ) {
    throw configError('floodgateMetrics.meterProvider', o.meterProvider, 'a MeterProvider');
  }
  const own = (o.hooks ?? {}) as RateLimiterHooks;
  if (typeof own !== 'object' || own === null) {
    throw configError('floodgateMetrics.hooks', o.hooks, 'an object of hook functions');
  }
  const provider = (o.meterProvider as MeterProvider | undefined) ?? metrics.getMeterProvider();
  return instrument(provider.getMeter(METER_NAME), limiter, own);
}

function instrument(meter: Meter, limiter: string, own: RateLimiterHooks): FloodgateMetrics {
  const decisions = meter.createCounter(METRIC_NAMES.decisions, {
    description: 'Rate-limit decisions, by outcome, deciding policy and reason',
    unit: '{decision}',
    valueType: ValueType.INT,
  });
  const storeDuration = meter.createHistogram(METRIC_NAMES.storeDuration, {
    description: 'Duration of rate-limit store calls (one per decision that reaches the store)',
    unit: 's',
    advice: { explicitBucketBoundaries: [...STORE_DURATION_BUCKETS] },
  });
  const storeErrors = meter.createCounter(METRIC_NAMES.storeErrors, {
    description: 'Rate-limit store calls that failed or timed out',
    unit: '{call}',
    valueType: ValueType.INT,
  });
  const deniedCacheHits = meter.createCounter(METRIC_NAMES.deniedCacheHits, {
    description: 'Decisions answered by the local denied-key cache, without a store call',
    unit: '{decision}',
    valueType: ValueType.INT,
  });
  const circuitState = meter.createObservableGauge(METRIC_NAMES.circuitState, {
    description: 'Circuit breaker state of the limiter: 0 closed, 1 half-open, 2 open',
    valueType: ValueType.INT,
  });
  let circuit: CircuitState = 'closed';
  // The user's hooks may be async: a rejection is caught and reported, never left unhandled.
  const caller = new HookCaller(`floodgateMetrics (limiter "${limiter}")`);
  circuitState.addCallback((result) => {
    result.observe(CIRCUIT_STATE_VALUES[circuit], { 'floodgate.limiter': limiter });
  });

  const hooks: RateLimiterHooks = {
    onDecision(decision: Decision, context: CallContext) {
      decisions.add(1, {
        'floodgate.limiter': limiter,
        'floodgate.outcome': outcomeOf(decision, context),
        'floodgate.policy': decision.policy,
        'floodgate.reason': decision.reason ?? 'policy',
        'floodgate.operation': context.peek ? 'peek' : 'consume',
      });
      if (context.cached) deniedCacheHits.add(1, { 'floodgate.limiter': limiter });
      caller.call(own, 'onDecision', decision, context);
    },
    onStoreCall(event: StoreCallEvent) {
      storeDuration.record(event.durationMs / 1000, {
        'floodgate.limiter': limiter,
        'floodgate.store.outcome': event.outcome,
      });
      caller.call(own, 'onStoreCall', event);
    },
    onStoreError(event: StoreErrorEvent) {
      storeErrors.add(1, { 'floodgate.limiter': limiter, 'floodgate.failure': event.failure });
      caller.call(own, 'onStoreError', event);
    },
    onCircuitChange(state: CircuitState) {
      circuit = state;
      caller.call(own, 'onCircuitChange', state);
    },
  };
  return { hooks };
}

/**
 * `shadow-denied` for a denial a shadow middleware did not enforce; `blocked` when a block
 * (lockout or `block(key)`) denied; else admitted/denied.
 */
function outcomeOf(decision: Decision, context: CallContext): DecisionOutcome {
  if (decision.allowed) return 'admitted';
  if (decision.shadow || context.shadow) return 'shadow-denied';
  return (decision.reason as string | undefined) === 'blocked' ? 'blocked' : 'denied';
}

export {
  OVERLOAD_METRIC_NAMES,
  type OverloadMetricsOptions,
  overloadMetrics,
  type StopOverloadMetrics,
} from './overload.js';
export {
  DEFAULT_TOP_KEYS,
  keyId,
  MAX_TOP_KEYS,
  type StopTopKeyMetrics,
  TOP_KEY_METRIC_NAMES,
  type TopKeyMetricsOptions,
  type TopKeySource,
  topKeyMetrics,
} from './top-keys.js';
