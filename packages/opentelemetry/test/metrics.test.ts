/**
 * The metrics a limiter reports through its hooks, read with the OpenTelemetry SDK's in-memory
 * exporter: decisions by outcome/policy/reason (never the key), store latency, store errors,
 * the circuit state and denied-cache hits; on a real Redis, on one that refuses connections,
 * and through an HTTP adapter. Then the Prometheus exporter is scraped over HTTP for the metric
 * names docs/observability.md queries.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  fixedWindow,
  memoryStore,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
} from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import { floodgateMetrics, METRIC_NAMES } from '@floodgate/opentelemetry';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import express from 'express';
import { Redis } from 'ioredis';
import request from 'supertest';
import { connectIoredis, flushRedis } from '../../../test/harness/redis';

let redis: Redis;
beforeAll(() => {
  redis = connectIoredis();
});
beforeEach(() => flushRedis(redis));
afterAll(() => redis.quit());

/** A MeterProvider whose points are read on demand from the SDK's in-memory exporter. */
function inMemoryMetrics() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    meterProvider,
    /** The latest data points of one instrument. */
    async points(name: string): Promise<DataPoint<unknown>[]> {
      exporter.reset();
      await reader.forceFlush();
      const found = exporter
        .getMetrics()
        .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
        .filter((m) => m.descriptor.name === name);
      return found.flatMap((m) => m.dataPoints as DataPoint<unknown>[]);
    },
    shutdown: () => meterProvider.shutdown(),
  };
}

const perMinute = fixedWindow({ limit: 2, window: '1m', name: 'per-minute' });

it('counts decisions by outcome, policy, reason and operation; never by key', async () => {
  const otel = inMemoryMetrics();
  try {
    const { hooks } = floodgateMetrics({ limiter: 'api', meterProvider: otel.meterProvider });
    const limiter = new RateLimiter({
      store: redisStore({ client: redis }),
      policies: perMinute,
      hooks,
    });
    for (const key of ['alice', 'alice', 'alice', 'bob']) await limiter.consume(key);
    await limiter.peek('bob');
    const points = await otel.points(METRIC_NAMES.decisions);
    const summary = points
      .map((p) => [p.attributes['floodgate.outcome'], p.attributes['floodgate.operation'], p.value])
      .sort();
    expect(summary).toEqual([
      ['admitted', 'consume', 3],
      ['admitted', 'peek', 1],
      ['denied', 'consume', 1],
    ]);
    for (const point of points) {
      expect(point.attributes).toMatchObject({
        'floodgate.limiter': 'api',
        'floodgate.policy': 'per-minute',
        'floodgate.reason': 'policy',
      });
      expect(JSON.stringify(point.attributes)).not.toMatch(/alice|bob/);
    }
  } finally {
    await otel.shutdown();
  }
});

it('records store latency per call, and denied-cache hits that make no call', async () => {
  const otel = inMemoryMetrics();
  try {
    const { hooks } = floodgateMetrics({ meterProvider: otel.meterProvider });
    const limiter = new RateLimiter({
      store: redisStore({ client: redis }),
      policies: perMinute,
      deniedCache: true,
      hooks,
    });
    for (let i = 0; i < 5; i++) await limiter.consume('k'); // 2 admitted, 1 denied by Redis, 2 cached
    const [latency] = await otel.points(METRIC_NAMES.storeDuration);
    const histogram = latency!.value as Histogram;
    expect(latency!.attributes).toEqual({
      'floodgate.limiter': 'default',
      'floodgate.store.outcome': 'ok',
    });
    expect(histogram.count).toBe(3);
    expect(histogram.sum).toBeGreaterThan(0);
    expect(histogram.max).toBeLessThan(1); // seconds
    expect(histogram.buckets.boundaries[0]).toBe(0.00005);
    const [hits] = await otel.points(METRIC_NAMES.deniedCacheHits);
    expect(hits!.value).toBe(2);
  } finally {
    await otel.shutdown();
  }
});

it('store down: errors by failure, fail-open decisions by reason, the circuit state as a gauge', async () => {
  const otel = inMemoryMetrics();
  // Port 1 on loopback: nothing listens there, so every call fails at once.
  const client = new Redis({
    port: 1,
    host: '127.0.0.1',
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  try {
    const { hooks } = floodgateMetrics({ limiter: 'api', meterProvider: otel.meterProvider });
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: perMinute,
      circuitBreaker: { failureThreshold: 2, cooldown: '1m' },
      hooks,
    });
    const state = async () => (await otel.points(METRIC_NAMES.circuitState))[0]?.value;
    expect(await state()).toBe(0);
    for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true);
    expect(await state()).toBe(2);
    const [errors] = await otel.points(METRIC_NAMES.storeErrors);
    expect([errors!.attributes['floodgate.failure'], errors!.value]).toEqual(['store-error', 2]);
    const reasons = (await otel.points(METRIC_NAMES.decisions))
      .map((p) => [p.attributes['floodgate.reason'], p.value])
      .sort();
    expect(reasons).toEqual([
      ['circuit-open', 1],
      ['store-error', 2],
    ]);
    const [latency] = await otel.points(METRIC_NAMES.storeDuration);
    expect(latency!.attributes['floodgate.store.outcome']).toBe('store-error');
  } finally {
    client.disconnect();
    await otel.shutdown();
  }
});

it('works as an adapter option, and calls your own hooks too', async () => {
  const otel = inMemoryMetrics();
  try {
    const seen: boolean[] = [];
    const telemetry = floodgateMetrics({
      limiter: 'http',
      meterProvider: otel.meterProvider,
      hooks: { onDecision: (decision) => seen.push(decision.allowed) },
    });
    const app = express();
    app.use(rateLimit({ store: memoryStore(), policies: perMinute, hooks: telemetry.hooks }));
    app.get('/', (_req, res) => res.send('ok'));
    for (let i = 0; i < 3; i++) await request(app).get('/');
    expect(seen).toEqual([true, true, false]);
    const outcomes = (await otel.points(METRIC_NAMES.decisions))
      .map((p) => [p.attributes['floodgate.outcome'], p.value])
      .sort();
    expect(outcomes).toEqual([
      ['admitted', 2],
      ['denied', 1],
    ]);
  } finally {
    await otel.shutdown();
  }
});

it('a shadow middleware reports would-be denials as shadow-denied, and lets them through', async () => {
  const otel = inMemoryMetrics();
  try {
    const seen: [boolean, boolean | undefined, boolean | undefined][] = [];
    const telemetry = floodgateMetrics({
      limiter: 'shadow',
      meterProvider: otel.meterProvider,
      hooks: { onDecision: (d, context) => seen.push([d.allowed, d.shadow, context.shadow]) },
    });
    const app = express();
    app.use(
      rateLimit({
        store: memoryStore(),
        policies: perMinute,
        hooks: telemetry.hooks,
        shadow: true,
      }),
    );
    app.get('/', (_req, res) => res.send('ok'));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await request(app).get('/')).status);
    expect(statuses).toEqual([200, 200, 200]);
    expect(seen).toEqual([
      [true, true, true],
      [true, true, true],
      [false, true, true],
    ]);
    const outcomes = (await otel.points(METRIC_NAMES.decisions))
      .map((p) => [p.attributes['floodgate.outcome'], p.value])
      .sort();
    expect(outcomes).toEqual([
      ['admitted', 2],
      ['shadow-denied', 1],
    ]);
  } finally {
    await otel.shutdown();
  }
});

it('bad options fail at once, naming the field', () => {
  expect(() => floodgateMetrics({ limiter: '' })).toThrow(RateLimitConfigError);
  expect(() => floodgateMetrics({ limiter: '' })).toThrow(
    expect.objectContaining({ field: 'floodgateMetrics.limiter' }),
  );
  expect(() => floodgateMetrics({ meterProvider: {} as never })).toThrow(
    expect.objectContaining({ field: 'floodgateMetrics.meterProvider' }),
  );
  expect(() => floodgateMetrics({ labels: {} } as never)).toThrow(
    expect.objectContaining({ code: 'FLOODGATE_UNKNOWN_OPTION' }),
  );
});

it('a Prometheus scrape has the series docs/observability.md queries', async () => {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const server: Server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { hooks } = floodgateMetrics({ limiter: 'api', meterProvider });
    const limiter = new RateLimiter({
      store: redisStore({ client: redis }),
      policies: perMinute,
      deniedCache: true,
      hooks,
    });
    for (let i = 0; i < 4; i++) await limiter.consume('k');
    const port = (server.address() as AddressInfo).port;
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(text).toMatch(
      /^floodgate_decisions_total\{floodgate_limiter="api",floodgate_outcome="denied",floodgate_policy="per-minute",floodgate_reason="policy",floodgate_operation="consume"(,[^}]*)?\} 2$/m,
    );
    expect(text).toMatch(/^floodgate_store_duration_bucket\{[^}]*le="0\.001"[^}]*\} \d+$/m);
    expect(text).toMatch(/^floodgate_store_duration_count\{[^}]*\} 3$/m);
    expect(text).toMatch(/^floodgate_circuit_state\{floodgate_limiter="api"[^}]*\} 0$/m);
    expect(text).toMatch(/^floodgate_denied_cache_hits_total\{floodgate_limiter="api"[^}]*\} 1$/m);
  } finally {
    server.close();
    await meterProvider.shutdown();
  }
});
