/**
 * overloadMetrics: the adaptive limit and requests in flight as gauges, and shed requests by
 * criticality class and reason, read with the OpenTelemetry SDK's in-memory exporter.
 */
import { adaptiveConcurrency } from '@floodgate/core';
import { configErrorOf } from '@floodgate/http-test-kit';
import { OVERLOAD_METRIC_NAMES, overloadMetrics } from '@floodgate/opentelemetry';
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
    async points(name: string): Promise<{ value: unknown; attributes: Record<string, unknown> }[]> {
      exporter.reset();
      await reader.forceFlush();
      return exporter
        .getMetrics()
        .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
        .filter((m) => m.descriptor.name === name)
        .flatMap((m) => m.dataPoints as DataPoint<unknown>[])
        .map((p) => ({ value: p.value, attributes: p.attributes }));
    },
    shutdown: () => meterProvider.shutdown(),
  };
}

describe('overloadMetrics', () => {
  it('reports the limit, requests in flight and shed requests by class and reason', async () => {
    const telemetry = inMemoryMetrics();
    const shed = adaptiveConcurrency({
      algorithm: 'aimd',
      initialLimit: 5,
      minLimit: 1,
      maxLimit: 5,
    });
    overloadMetrics(shed, { limiter: 'api', meterProvider: telemetry.meterProvider });
    const leases = [];
    for (let i = 0; i < 5; i++)
      leases.push((await shed.acquire({ criticality: 'critical' })).lease);
    await shed.acquire({ criticality: 'sheddable' });
    await shed.acquire({ criticality: 'sheddable' });
    await shed.acquire({ criticality: 'critical' });
    expect(await telemetry.points(OVERLOAD_METRIC_NAMES.limit)).toEqual([
      { value: 5, attributes: { 'floodgate.limiter': 'api' } },
    ]);
    expect(await telemetry.points(OVERLOAD_METRIC_NAMES.inFlight)).toEqual([
      { value: 5, attributes: { 'floodgate.limiter': 'api' } },
    ]);
    const shedPoints = await telemetry.points(OVERLOAD_METRIC_NAMES.shed);
    expect(shedPoints).toEqual(
      expect.arrayContaining([
        {
          value: 2,
          attributes: {
            'floodgate.limiter': 'api',
            'floodgate.criticality': 'sheddable',
            'floodgate.reason': 'overloaded',
          },
        },
        {
          value: 1,
          attributes: {
            'floodgate.limiter': 'api',
            'floodgate.criticality': 'critical',
            'floodgate.reason': 'overloaded',
          },
        },
      ]),
    );
    expect(shedPoints).toHaveLength(2);
    leases[0]?.release({ dropped: true }); // 5 × 0.9 = 4.5: the limit falls to 4
    expect(await telemetry.points(OVERLOAD_METRIC_NAMES.limit)).toEqual([
      { value: 4, attributes: { 'floodgate.limiter': 'api' } },
    ]);
    expect((await telemetry.points(OVERLOAD_METRIC_NAMES.inFlight))[0]?.value).toBe(4);
    await telemetry.shutdown();
  });

  it('labels with the limiter name by default and stops reporting when told', async () => {
    const telemetry = inMemoryMetrics();
    const shed = adaptiveConcurrency({
      algorithm: 'aimd',
      initialLimit: 1,
      minLimit: 1,
      maxLimit: 1,
    });
    const stop = overloadMetrics(shed, { meterProvider: telemetry.meterProvider });
    await shed.acquire({ criticality: 'sheddable' });
    expect(
      (await telemetry.points(OVERLOAD_METRIC_NAMES.shed))[0]?.attributes['floodgate.limiter'],
    ).toBe('adaptive-aimd');
    stop();
    await shed.acquire({ criticality: 'sheddable' });
    expect((await telemetry.points(OVERLOAD_METRIC_NAMES.shed))[0]?.value).toBe(1);
    await telemetry.shutdown();
  });

  it('refuses bad options', () => {
    const shed = adaptiveConcurrency();
    expect(configErrorOf(() => overloadMetrics({} as never)).field).toBe('overloadMetrics.shedder');
    expect(configErrorOf(() => overloadMetrics(shed, { limiter: '' })).field).toBe(
      'overloadMetrics.limiter',
    );
    expect(configErrorOf(() => overloadMetrics(shed, { meter: 1 } as never)).field).toBe(
      'overloadMetrics.meter',
    );
  });
});
