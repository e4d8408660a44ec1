/**
 * "Who is being limited", with bounded cardinality: the top N keys a limiter denies most and the
 * top N keys taking most of its decisions (`limiter.deniedKeys()` / `limiter.hotKeys()`, each a
 * fixed-memory sketch in the process) as gauges. Keys may carry personal data (an IP, a user id,
 * an e-mail): by default a key is reported as a number, its id (a keyed hash, HMAC-SHA-256
 * truncated to 48 bits), in a slot per rank: `floodgate.rank` 1 … N is the only attribute that
 * varies, so each gauge has exactly N series for the life of the process. Slots, not keys, are
 * the series because the OpenTelemetry JS SDK (3.x), under cumulative temporality (Prometheus),
 * keeps exporting every attribute set an asynchronous instrument ever observed, with its last
 * value: one series per key that was ever in the top N. With `rawKeys: true` the key itself is
 * the `floodgate.key` attribute: meant for small key spaces (tenants, plans).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { HotKey } from '@floodgate/core';
import { configError, readOptions } from '@floodgate/core/http';
import {
  type BatchObservableCallback,
  type Meter,
  type MeterProvider,
  metrics,
  type ObservableCallback,
  type ObservableGauge,
  ValueType,
} from '@opentelemetry/api';

/** The instrumentation scope: the same as `floodgateMetrics`' (index.ts imports this file). */
const METER_NAME = '@floodgate/opentelemetry';

/** Instrument names of the top-key metrics. */
export const TOP_KEY_METRIC_NAMES = {
  /** Gauge of denials per second of the keys denied most: `floodgate.rank` (or `floodgate.key`). */
  denied: 'floodgate.keys.denied',
  /** Gauge of the id (`keyId`) of the key at each `floodgate.rank` of `denied`; 0 for none. */
  deniedId: 'floodgate.keys.denied.id',
  /** Gauge of decisions per second of the keys taking the most: `floodgate.rank` (or `floodgate.key`). */
  hot: 'floodgate.keys.hot',
  /** Gauge of the id (`keyId`) of the key at each `floodgate.rank` of `hot`; 0 for none. */
  hotId: 'floodgate.keys.hot.id',
} as const;

/** What `topKeyMetrics` reads: a RateLimiter (or an adapter's `limiter`). */
export interface TopKeySource {
  hotKeys(n?: number): readonly HotKey[];
  deniedKeys(n?: number): readonly HotKey[];
}

export interface TopKeyMetricsOptions {
  /**
   * The `floodgate.limiter` attribute on every data point: tells limiters apart. A fixed label.
   * @default 'default'
   */
  limiter?: string;
  /** Keys reported per gauge at each collection, 1 … 100. @default 10 */
  top?: number;
  /**
   * The HMAC key of the reported ids. Give every process of a fleet the same secret salt to see
   * one key with one id across processes and restarts (and to find a key's id with `keyId`);
   * keep it secret: with it, ids of guessable keys (IP addresses) can be reversed.
   * @default a random salt per process
   */
  salt?: string | Uint8Array;
  /**
   * Report each key as it is (at most 128 characters; longer keys as `prefix...#hash`), as the
   * `floodgate.key` attribute of the rate gauges, instead of ids in rank slots. Keys often carry
   * personal data (IP addresses, user ids): opt in knowingly, for small key spaces (tenants,
   * plans): a key that leaves the top N is reported once more as 0, and the JS SDK keeps
   * exporting it (at 0) under cumulative temporality.
   * @default false
   */
  rawKeys?: boolean;
  /** @default the global MeterProvider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
}

/** Stops reporting: removes the gauges' callbacks. */
export type StopTopKeyMetrics = () => void;

/** @default 10 keys per gauge. */
export const DEFAULT_TOP_KEYS = 10;
/** The most keys a gauge may report per collection. */
export const MAX_TOP_KEYS = 100;
/** Bytes of the HMAC kept as a key's id: 48 bits, an exact integer in a float64 metric value. */
const KEY_ID_BYTES = 6;

const OPTION_NAMES = ['limiter', 'top', 'salt', 'rawKeys', 'meterProvider'] as const;

/**
 * The id `topKeyMetrics` reports for `key` with `salt`: the first 48 bits of HMAC-SHA-256 of the
 * key (as `hotKeys()` shows it), as an integer (never 0). Answers "is user X the one at rank 1?"
 * on your side of the dashboard.
 *
 * @example
 * ```ts
 * keyId('user-42', process.env.FLOODGATE_KEY_SALT!); // e.g. 69_784_712_449_312
 * ```
 */
export function keyId(key: string, salt: string | Uint8Array): number {
  const id = createHmac('sha256', salt).update(key, 'utf8').digest().readUIntBE(0, KEY_ID_BYTES);
  return id === 0 ? 1 : id; // 0 marks an empty slot
}

/**
 * Reports a limiter's top denied keys and hot keys as gauges, `floodgate.keys.denied` and
 * `floodgate.keys.hot` (per second, over the last second or so, in this process), one series
 * per `floodgate.rank` (1 … top), with the key's id at the same rank in `floodgate.keys.denied.id`
 * and `floodgate.keys.hot.id`; with `rawKeys: true`, one series per key (`floodgate.key`)
 * instead. Needs the limiter's `hotKeys` option on (the default).
 *
 * @example
 * ```ts
 * const limiter = new RateLimiter({ store, policies });
 * topKeyMetrics(limiter, { limiter: 'api', salt: process.env.FLOODGATE_KEY_SALT });
 * ```
 */
export function topKeyMetrics(
  source: TopKeySource,
  options: TopKeyMetricsOptions = {},
): StopTopKeyMetrics {
  const o = readOptions(options, 'topKeyMetrics', OPTION_NAMES);
  const candidate = source as Partial<TopKeySource> | null;
  if (typeof candidate?.hotKeys !== 'function' || typeof candidate.deniedKeys !== 'function') {
    throw configError('topKeyMetrics.source', source, 'a RateLimiter (or a middleware.limiter)');
  }
  const label = o.limiter ?? 'default';
  if (typeof label !== 'string' || label === '') {
    throw configError('topKeyMetrics.limiter', o.limiter, 'a non-empty string');
  }
  const top = o.top ?? DEFAULT_TOP_KEYS;
  if (typeof top !== 'number' || !Number.isSafeInteger(top) || top < 1 || top > MAX_TOP_KEYS) {
    throw configError('topKeyMetrics.top', o.top, `an integer from 1 to ${MAX_TOP_KEYS}`);
  }
  const reporting = readKeyReporting(o.rawKeys, o.salt);
  if (
    o.meterProvider !== undefined &&
    typeof (o.meterProvider as MeterProvider | null)?.getMeter !== 'function'
  ) {
    throw configError('topKeyMetrics.meterProvider', o.meterProvider, 'a MeterProvider');
  }
  const provider = (o.meterProvider as MeterProvider | undefined) ?? metrics.getMeterProvider();
  const meter = provider.getMeter(METER_NAME);
  const gauges = (kind: 'denied' | 'hot', what: string, unit: string) => {
    const rate = meter.createObservableGauge(TOP_KEY_METRIC_NAMES[kind], {
      description: `${what} per second of the ${top} keys with the most (in this process)`,
      unit,
      valueType: ValueType.DOUBLE,
    });
    const id = meter.createObservableGauge(TOP_KEY_METRIC_NAMES[`${kind}Id`], {
      description: `Id (keyId) of the key at each rank of ${TOP_KEY_METRIC_NAMES[kind]}; 0 for none`,
      valueType: ValueType.INT,
    });
    const read = (n: number) => (kind === 'denied' ? source.deniedKeys(n) : source.hotKeys(n));
    return reporting === 'raw'
      ? reportRaw(rate, read, top, label)
      : reportSlots(meter, rate, id, read, top, label, reporting);
  };
  const stops = [
    gauges('denied', 'Denials', '{denial}/s'),
    gauges('hot', 'Decisions', '{decision}/s'),
  ];
  return () => {
    for (const stop of stops) stop();
  };
}

/** The top keys in N rank slots: rate and id per `floodgate.rank`, 0 for an empty slot. */
function reportSlots(
  meter: Meter,
  rate: ObservableGauge,
  id: ObservableGauge,
  read: (n: number) => readonly HotKey[],
  top: number,
  label: string,
  idOf: (key: string) => number,
): StopTopKeyMetrics {
  const slots = Array.from({ length: top }, (_, i) =>
    Object.freeze({ 'floodgate.limiter': label, 'floodgate.rank': i + 1 }),
  );
  // One callback for both gauges, so a rate and the id beside it describe the same list.
  const observe: BatchObservableCallback = (result) => {
    const listed = read(top).filter((k) => k.rate > 0);
    slots.forEach((slot, i) => {
      const entry = listed[i];
      result.observe(rate, entry?.rate ?? 0, slot);
      result.observe(id, entry === undefined ? 0 : idOf(entry.key), slot);
    });
  };
  meter.addBatchObservableCallback(observe, [rate, id]);
  return () => meter.removeBatchObservableCallback(observe, [rate, id]);
}

/** The top keys by name (`rawKeys: true`); a key that left the list is reported once as 0. */
function reportRaw(
  rate: ObservableGauge,
  read: (n: number) => readonly HotKey[],
  top: number,
  label: string,
): StopTopKeyMetrics {
  let previous = new Set<string>();
  const onRate: ObservableCallback = (result) => {
    const current = new Set<string>();
    for (const entry of read(top)) {
      if (entry.rate <= 0) continue;
      current.add(entry.key);
      result.observe(entry.rate, { 'floodgate.limiter': label, 'floodgate.key': entry.key });
    }
    for (const key of previous) {
      if (!current.has(key))
        result.observe(0, { 'floodgate.limiter': label, 'floodgate.key': key });
    }
    previous = current;
  };
  rate.addCallback(onRate);
  return () => rate.removeCallback(onRate);
}

/** How keys are reported: raw (opt-in, no salt), or ids keyed with the given or a random salt. */
function readKeyReporting(rawKeys: unknown, salt: unknown): 'raw' | ((key: string) => number) {
  if (rawKeys !== undefined && typeof rawKeys !== 'boolean') {
    throw configError('topKeyMetrics.rawKeys', rawKeys, 'true or false');
  }
  if (rawKeys === true) {
    if (salt !== undefined) {
      throw configError(
        'topKeyMetrics.salt',
        salt,
        'left out with rawKeys: true (nothing is hashed)',
      );
    }
    return 'raw';
  }
  if (
    salt !== undefined &&
    !(typeof salt === 'string' && salt !== '') &&
    !(salt instanceof Uint8Array && salt.length > 0)
  ) {
    throw configError('topKeyMetrics.salt', salt, 'a non-empty string or Uint8Array');
  }
  const secret = (salt as string | Uint8Array | undefined) ?? randomBytes(32);
  return (key) => keyId(key, secret);
}
