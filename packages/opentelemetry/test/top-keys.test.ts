/**
 * topKeyMetrics: the top-N denied and hot keys of a limiter as gauges, read with the
 * OpenTelemetry SDK's in-memory exporter: at most N data points per gauge at every collection
 * (however many keys the limiter saw, and after the top keys changed), keys hashed with the salt
 * unless `rawKeys: true`, and options validated like every option.
 */

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fixedWindow, memoryStore, RateLimiter } from '@floodgate/core';
import { configErrorOf } from '@floodgate/http-test-kit';
import { keyId, TOP_KEY_METRIC_NAMES, topKeyMetrics } from '@floodgate/opentelemetry';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import {
  AggregationTemporality,
  type DataPoint,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';

function inMemoryMetrics() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    meterProvider,
    async points(name: string): Promise<{ value: number; attributes: Record<string, unknown> }[]> {
      exporter.reset();
      await reader.forceFlush();
      return exporter
        .getMetrics()
        .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
        .filter((m) => m.descriptor.name === name)
        .flatMap((m) => m.dataPoints as DataPoint<number>[])
        .map((p) => ({ value: p.value, attributes: p.attributes }));
    },
    shutdown: () => meterProvider.shutdown(),
  };
}

/** A limiter of 2 per hour on a fake clock, and a way to send `count` decisions for a key. */
function limiterAt(clock: () => number) {
  const limiter = new RateLimiter({
    store: memoryStore({ clock }),
    policies: fixedWindow({ limit: 2, window: '1h' }),
    hotKeys: { halfLife: '1s', clock },
  });
  const send = async (key: string, count: number) => {
    for (let i = 0; i < count; i++) await limiter.consume(key);
  };
  return { limiter, send };
}

const SALT = 'test-salt';

/** The points of one limiter label, by rank: [rate, id] per slot. */
async function slots(telemetry: ReturnType<typeof inMemoryMetrics>, kind: 'denied' | 'hot') {
  const rates = await telemetry.points(TOP_KEY_METRIC_NAMES[kind]);
  const ids = await telemetry.points(TOP_KEY_METRIC_NAMES[`${kind}Id`]);
  const rank = (p: { attributes: Record<string, unknown> }) => p.attributes['floodgate.rank'];
  return rates
    .map((r) => [rank(r), r.value, ids.find((i) => rank(i) === rank(r))?.value])
    .sort((a, b) => (a[0] as number) - (b[0] as number));
}

describe('topKeyMetrics', () => {
  it('reports the N keys denied most and the N hottest as ids in rank slots', async () => {
    const telemetry = inMemoryMetrics();
    let now = 1_000_000;
    const { limiter, send } = limiterAt(() => now);
    topKeyMetrics(limiter, {
      limiter: 'api',
      top: 3,
      salt: SALT,
      meterProvider: telemetry.meterProvider,
    });
    await send('alice@example.com', 12); // 10 denied
    await send('10.0.0.7', 7); // 5 denied
    for (let i = 0; i < 50; i++) await send(`user-${i}`, 1); // never denied
    now += 1000; // one half-life: the 1 s watched holds every decision above
    expect(await slots(telemetry, 'denied')).toEqual([
      [1, 10, keyId('alice@example.com', SALT)],
      [2, 5, keyId('10.0.0.7', SALT)],
      [3, 0, 0], // an empty slot
    ]);
    const hot = await slots(telemetry, 'hot');
    expect(hot.map(([, rate]) => rate)).toEqual([12, 7, 1]);
    expect(hot.slice(0, 2).map(([, , id]) => id)).toEqual([
      keyId('alice@example.com', SALT),
      keyId('10.0.0.7', SALT),
    ]);
    const points = await telemetry.points(TOP_KEY_METRIC_NAMES.denied);
    expect(points[0]?.attributes).toEqual({ 'floodgate.limiter': 'api', 'floodgate.rank': 1 });
    expect(JSON.stringify(await telemetry.points(TOP_KEY_METRIC_NAMES.hotId))).not.toMatch(
      /alice|10\.0\.0\.7/,
    );
    expect(Number.isSafeInteger(keyId('alice@example.com', SALT))).toBe(true);
    expect(keyId('alice@example.com', SALT)).not.toBe(keyId('alice@example.com', 'other'));
    await telemetry.shutdown();
  });

  it('keeps exactly N series per gauge while the top keys change', async () => {
    const telemetry = inMemoryMetrics();
    let now = 1_000_000;
    const { limiter, send } = limiterAt(() => now);
    topKeyMetrics(limiter, { top: 3, salt: SALT, meterProvider: telemetry.meterProvider });
    const ids = new Set<unknown>();
    for (let round = 0; round < 10; round++) {
      // Each round, three new keys take over; the old ones go quiet and decay away.
      for (let k = 0; k < 3; k++) await send(`round-${round}-key-${k}`, 20 + k);
      now += 1000;
      for (const name of Object.values(TOP_KEY_METRIC_NAMES)) {
        expect(await telemetry.points(name)).toHaveLength(3);
      }
      const hot = await slots(telemetry, 'hot');
      const rates = hot.map(([, rate]) => rate as number);
      expect(rates[2]).toBeGreaterThan(0);
      expect([...rates].sort((x, y) => y - x)).toEqual(rates);
      expect(hot[0]?.[2]).toBe(keyId(`round-${round}-key-2`, SALT));
      for (const [, , id] of hot) ids.add(id);
    }
    expect(ids.size).toBe(30); // the keys did change; the series did not
    await telemetry.shutdown();
  });

  it('uses a random salt per process unless given one, and raw keys only on request', async () => {
    const telemetry = inMemoryMetrics();
    let now = 1_000_000;
    const { limiter, send } = limiterAt(() => now);
    for (const label of ['a', 'b']) {
      topKeyMetrics(limiter, { limiter: label, top: 1, meterProvider: telemetry.meterProvider });
    }
    topKeyMetrics(limiter, {
      limiter: 'raw',
      rawKeys: true,
      meterProvider: telemetry.meterProvider,
    });
    await send('carol', 4);
    now += 1000;
    const ids = Object.fromEntries(
      (await telemetry.points(TOP_KEY_METRIC_NAMES.deniedId)).map((p) => [
        p.attributes['floodgate.limiter'],
        p.value,
      ]),
    );
    expect(ids.a).toBeGreaterThan(0);
    expect(ids.a).not.toBe(ids.b);
    expect(ids.raw).toBeUndefined(); // raw: no ids, the key is the attribute
    const raw = (await telemetry.points(TOP_KEY_METRIC_NAMES.denied)).filter(
      (p) => p.attributes['floodgate.limiter'] === 'raw',
    );
    expect(raw).toEqual([
      { value: 2, attributes: { 'floodgate.limiter': 'raw', 'floodgate.key': 'carol' } },
    ]);
    // Raw keys that leave the list are reported once more, as 0.
    now += 30_000;
    await send('dan', 3);
    const after = (await telemetry.points(TOP_KEY_METRIC_NAMES.denied)).filter(
      (p) => p.attributes['floodgate.limiter'] === 'raw',
    );
    expect(after).toEqual(
      expect.arrayContaining([
        { value: 0, attributes: { 'floodgate.limiter': 'raw', 'floodgate.key': 'carol' } },
        expect.objectContaining({
          attributes: { 'floodgate.limiter': 'raw', 'floodgate.key': 'dan' },
        }),
      ]),
    );
    await telemetry.shutdown();
  });

  it('stops reporting when stopped; a limiter with hotKeys off has empty slots', async () => {
    const telemetry = inMemoryMetrics();
    let now = 1_000_000;
    const { limiter, send } = limiterAt(() => now);
    const stop = topKeyMetrics(limiter, { top: 2, meterProvider: telemetry.meterProvider });
    const off = new RateLimiter({
      store: memoryStore(),
      policies: fixedWindow({ limit: 1, window: '1h' }),
      hotKeys: false,
    });
    topKeyMetrics(off, { limiter: 'off', top: 2, meterProvider: telemetry.meterProvider });
    await off.consume('dave');
    await off.consume('dave');
    await send('erin', 5);
    now += 1000;
    const byLimiter = (points: { value: number; attributes: Record<string, unknown> }[]) =>
      points.map((p) => [
        p.attributes['floodgate.limiter'],
        p.attributes['floodgate.rank'],
        p.value,
      ]);
    expect(byLimiter(await telemetry.points(TOP_KEY_METRIC_NAMES.denied))).toEqual(
      expect.arrayContaining([
        ['default', 1, 3],
        ['default', 2, 0],
        ['off', 1, 0],
        ['off', 2, 0],
      ]),
    );
    stop();
    const left = byLimiter(await telemetry.points(TOP_KEY_METRIC_NAMES.denied));
    // The SDK keeps exporting what a stopped callback last observed; nothing new is read.
    await send('erin', 5);
    now += 1000;
    expect(byLimiter(await telemetry.points(TOP_KEY_METRIC_NAMES.denied))).toEqual(left);
    await telemetry.shutdown();
  });

  it('a Prometheus scrape has the series docs/observability.md queries', async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const meterProvider = new MeterProvider({ readers: [exporter] });
    const server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      let now = 1_000_000;
      const { limiter, send } = limiterAt(() => now);
      topKeyMetrics(limiter, { limiter: 'api', top: 2, salt: SALT, meterProvider });
      await send('frank', 6);
      now += 1000;
      const port = (server.address() as AddressInfo).port;
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const id = keyId('frank', SALT);
      expect(text).toMatch(
        /^floodgate_keys_denied\{floodgate_limiter="api",floodgate_rank="1"[^}]*\} 4$/m,
      );
      expect(text).toMatch(
        /^floodgate_keys_denied\{floodgate_limiter="api",floodgate_rank="2"[^}]*\} 0$/m,
      );
      const idLine =
        /^floodgate_keys_denied_id\{floodgate_limiter="api",floodgate_rank="1"[^}]*\} (\S+)$/m;
      expect(Number(idLine.exec(text)?.[1])).toBe(id);
      expect(text).toMatch(
        /^floodgate_keys_hot\{floodgate_limiter="api",floodgate_rank="1"[^}]*\} 6$/m,
      );
      expect(text).toMatch(
        /^floodgate_keys_hot_id\{floodgate_limiter="api",floodgate_rank="1"[^}]*\} /m,
      );
      expect(text).not.toMatch(/frank/);
    } finally {
      server.close();
      await meterProvider.shutdown();
    }
  });

  it('refuses bad options with the field named', () => {
    const { limiter } = limiterAt(() => 1_000_000);
    const cases: [unknown, unknown, string][] = [
      [{}, {}, 'topKeyMetrics.source'],
      [limiter, { top: 0 }, 'topKeyMetrics.top'],
      [limiter, { top: 101 }, 'topKeyMetrics.top'],
      [limiter, { salt: '' }, 'topKeyMetrics.salt'],
      [limiter, { salt: 42 }, 'topKeyMetrics.salt'],
      [limiter, { rawKeys: 'yes' }, 'topKeyMetrics.rawKeys'],
      [limiter, { rawKeys: true, salt: 's' }, 'topKeyMetrics.salt'],
      [limiter, { limiter: '' }, 'topKeyMetrics.limiter'],
      [limiter, { meterProvider: {} }, 'topKeyMetrics.meterProvider'],
      [limiter, { topN: 5 }, 'topKeyMetrics.topN'],
    ];
    for (const [source, options, field] of cases) {
      const error = configErrorOf(() => topKeyMetrics(source as never, options as never));
      expect(error.field).toBe(field);
    }
  });
});
