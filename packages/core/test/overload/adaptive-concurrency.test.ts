/**
 * adaptiveConcurrency through its public API: admission under the limit, leases whose release
 * feeds the measured latency (injected clock) to the algorithm, criticality reserves, the
 * event-loop signal and option validation.
 */

import { configErrorOf } from '@floodgate/http-test-kit';
import { adaptiveConcurrency, RateLimitArgumentError } from '../../src/index';

/** A fixed limit of `n`: AIMD with min = initial = max. */
const fixed = (n: number, extra: Record<string, unknown> = {}) =>
  adaptiveConcurrency({ algorithm: 'aimd', initialLimit: n, minLimit: n, maxLimit: n, ...extra });

describe('adaptiveConcurrency', () => {
  it('admits up to the limit with leases, denies beyond it, and frees a slot on release', async () => {
    const shed = fixed(2);
    const a = await shed.acquire({ criticality: 'critical' });
    const b = await shed.acquire({ criticality: 'critical' });
    const c = await shed.acquire({ criticality: 'critical' });
    expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false]);
    expect(a).toMatchObject({ limit: 2, remaining: 1, inFlight: 1, policy: 'adaptive-aimd' });
    expect(c).toMatchObject({ reason: 'overloaded', remaining: 0, inFlight: 2 });
    expect(c.lease).toBeUndefined();
    expect(c.retryAfter).toBeGreaterThanOrEqual(1);
    expect(a.lease?.release()).toBe(true);
    expect(a.lease?.release()).toBe(false); // idempotent: the slot is freed once
    expect(shed.inFlight).toBe(1);
    expect((await shed.acquire({ criticality: 'critical' })).allowed).toBe(true);
  });

  it('measures latency from acquire to release with the injected clock', async () => {
    let now = 1_000_000;
    const shed = adaptiveConcurrency({
      algorithm: 'aimd',
      initialLimit: 8,
      minLimit: 1,
      backoffRatio: 0.5,
      timeout: '100ms',
      clock: () => now,
    });
    const slow = await shed.acquire();
    now += 150; // over the timeout: a drop, the limit halves
    slow.lease?.release();
    expect(shed.limit).toBe(4);
    const quick = await shed.acquire();
    now += 150;
    quick.lease?.release({ latency: 50 }); // the caller's own measurement wins
    expect(shed.limit).toBe(4);
    const failed = await shed.acquire();
    failed.lease?.release({ latency: 1, dropped: true });
    expect(shed.limit).toBe(2);
  });

  it('retries after the smoothed latency of recent requests', async () => {
    let now = 0;
    const shed = fixed(1, { clock: () => now });
    const first = await shed.acquire({ criticality: 'critical' });
    now += 2400;
    first.lease?.release();
    await shed.acquire({ criticality: 'critical' });
    const denied = await shed.acquire({ criticality: 'critical' });
    expect(denied.retryAfter).toBe(2400);
  });

  it('sheds sheddable first, then default, keeping the top of the limit for critical', async () => {
    // limit 10: sheddable may fill 10 × 0.7 = 7, default 10 × 0.8 = 8, critical all 10
    const shed = fixed(10);
    const admitted = { sheddable: 0, default: 0, critical: 0 };
    for (const criticality of ['sheddable', 'default', 'critical'] as const) {
      for (let i = 0; i < 10; i++) {
        if ((await shed.acquire({ criticality })).allowed) admitted[criticality] += 1;
      }
    }
    expect(admitted).toEqual({ sheddable: 7, default: 1, critical: 2 });
    const denied = await shed.acquire({ criticality: 'default' });
    expect(denied).toMatchObject({ allowed: false, reason: 'overloaded', criticality: 'default' });
  });

  it('takes the reserves as options', async () => {
    const shed = fixed(10, { criticalReserve: 0.5, defaultReserve: 0 });
    let admitted = 0;
    for (let i = 0; i < 10; i++)
      if ((await shed.acquire({ criticality: 'sheddable' })).allowed) admitted++;
    expect(admitted).toBe(5);
    expect((await shed.acquire({ criticality: 'default' })).allowed).toBe(false);
    expect((await shed.acquire({ criticality: 'critical' })).allowed).toBe(true);
  });

  it('learns from a class that fills its own ceiling, however large the critical reserve', async () => {
    // limit 10 with 60 % reserved: default requests may fill 4 slots. Four of them in flight
    // use the whole of their share, so the service is not application-limited: AIMD grows.
    const shed = adaptiveConcurrency({
      algorithm: 'aimd',
      initialLimit: 10,
      minLimit: 1,
      criticalReserve: 0.6,
      defaultReserve: 0,
    });
    const held = await Promise.all([1, 2, 3, 4].map(() => shed.acquire()));
    expect(held.map((d) => d.allowed)).toEqual([true, true, true, true]);
    expect((await shed.acquire()).allowed).toBe(false);
    held[0]!.lease!.release({ latency: 10 }); // admitted at 1 of 4: a quarter in use, skipped
    expect(shed.limit).toBe(10);
    held[3]!.lease!.release({ latency: 10 }); // admitted at 4 of 4 (10 of 10 scaled): +1
    expect(shed.limit).toBe(11);
    held[2]!.lease!.release({ latency: 10 }); // 3 of 4: 7 of 10 (rounded down), over half: +1
    expect(shed.limit).toBe(12);
    // a critical request is measured against the whole limit, as before
    const critical = await shed.acquire({ criticality: 'critical' });
    critical.lease!.release({ latency: 10 }); // 2 of 12 in flight: skipped
    expect(shed.limit).toBe(12);
  });

  it('tells Gradient2 which samples ran while requests were refused, so its queue is not learnt as normal', async () => {
    const shed = adaptiveConcurrency({
      algorithm: 'gradient2',
      initialLimit: 2,
      minLimit: 1,
      maxLimit: 2,
    });
    const gradient2 = shed.estimator as unknown as { longRttMicros: number };
    // The long-term RTT learns 10 ms at 1 in flight, nothing refused.
    for (let i = 0; i < 10; i++) {
      (await shed.acquire({ criticality: 'critical' })).lease!.release({ latency: 10 });
    }
    expect(gradient2.longRttMicros).toBe(10_000);
    const first = await shed.acquire({ criticality: 'critical' });
    const second = await shed.acquire({ criticality: 'critical' });
    expect((await shed.acquire({ criticality: 'critical' })).allowed).toBe(false); // refused
    // admitted at 2 in flight while a request was refused, slower: not taken
    second.lease!.release({ latency: 50 });
    expect(gradient2.longRttMicros).toBe(10_000);
    // admitted at 1 in flight (no more than the baseline's): the service's own latency, taken:
    // (10000 × 599 + 50000 × 2) / 601 = 10133.1
    first.lease!.release({ latency: 50 });
    expect(gradient2.longRttMicros).toBe(10_133);
    // nothing refused while these two ran: taken as Netflix's Gradient2 takes every sample
    const third = await shed.acquire({ criticality: 'critical' });
    const fourth = await shed.acquire({ criticality: 'critical' });
    fourth.lease!.release({ latency: 50 });
    third.lease!.release({ latency: 10 });
    // (10133 × 599 + 50000 × 2) / 601 = 10265.7, then (10265 × 599 + 10000 × 2) / 601 = 10264.1
    expect(gradient2.longRttMicros).toBe(10_264);
  });

  it('frees the slot of an ignored release without teaching the algorithm', async () => {
    const shed = adaptiveConcurrency({ algorithm: 'aimd', initialLimit: 2, minLimit: 1 });
    const a = await shed.acquire({ criticality: 'critical' });
    const b = await shed.acquire({ criticality: 'critical' });
    expect(a.lease!.release({ ignore: true, dropped: true })).toBe(true); // a drop, ignored
    expect([shed.inFlight, shed.limit]).toEqual([1, 2]);
    expect(a.lease!.release()).toBe(false);
    b.lease!.release({ dropped: true }); // a drop that counts: 2 × 0.9
    expect([shed.inFlight, shed.limit]).toEqual([0, 1]);
  });

  it('tells subscribers every decision until they unsubscribe', async () => {
    const shed = fixed(1);
    const seen: string[] = [];
    const stop = shed.subscribe((d) => seen.push(`${d.criticality}:${d.allowed}`));
    await shed.acquire({ criticality: 'critical' });
    await shed.acquire({ criticality: 'sheddable' });
    stop();
    await shed.acquire();
    expect(seen).toEqual(['critical:true', 'sheddable:false']);
  });

  it('refuses bad call arguments', async () => {
    const shed = fixed(1);
    await expect(shed.acquire({ criticality: 'urgent' as never })).rejects.toThrow(
      RateLimitArgumentError,
    );
    await expect(shed.acquire({ priority: 1 } as never)).rejects.toThrow(
      /priority is not an acquire option/,
    );
    const d = await shed.acquire({ criticality: 'critical' });
    expect(d.lease).toBeDefined();
    expect(() => d.lease?.release({ latency: -1 })).toThrow(RateLimitArgumentError);
    expect(() => d.lease?.release({ dropped: 'yes' as never })).toThrow(RateLimitArgumentError);
    expect(() => d.lease?.release({ ignore: 1 as never })).toThrow(RateLimitArgumentError);
    expect(shed.inFlight).toBe(1); // a refused release frees nothing
  });
});

describe('adaptiveConcurrency event-loop signal', () => {
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      // the event loop is busy: nothing else runs
    }
  };

  it('sheds sheddable and default requests while the event loop is busy, never critical', async () => {
    const shed = adaptiveConcurrency({
      eventLoop: { interval: '20ms', sheddable: 0.5, default: 0.6 },
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    busy(150);
    const sheddable = shed.tryAcquire({ criticality: 'sheddable' });
    expect(sheddable).toMatchObject({ allowed: false, reason: 'event-loop' });
    expect(shed.tryAcquire({ criticality: 'default' })).toMatchObject({
      allowed: false,
      reason: 'event-loop',
    });
    expect(shed.tryAcquire({ criticality: 'critical' }).allowed).toBe(true);
    expect(shed.eventLoopUtilization).toBeGreaterThan(0.6);
    // Idle again: a later sample is low and sheddable requests get in (polled, bounded: ~2 s,
    // as another process may keep this one from running on a busy machine).
    let admitted = false;
    for (let i = 0; i < 40 && !admitted; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const d = shed.tryAcquire({ criticality: 'sheddable' });
      admitted = d.allowed;
      d.lease?.release();
    }
    expect(admitted).toBe(true);
  });

  it('is off by default', () => {
    const shed = adaptiveConcurrency();
    busy(50);
    expect(shed.eventLoopUtilization).toBeUndefined();
    expect(shed.tryAcquire({ criticality: 'sheddable' }).allowed).toBe(true);
  });
});

describe('adaptiveConcurrency options', () => {
  it("defaults to Gradient2 with Netflix's initial limit", () => {
    const shed = adaptiveConcurrency();
    expect([shed.algorithm, shed.limit, shed.name]).toEqual([
      'gradient2',
      20,
      'adaptive-gradient2',
    ]);
    expect(adaptiveConcurrency({ algorithm: 'vegas' }).limit).toBe(20);
  });

  it.each([
    [{ algorithm: 'bbr' }, 'adaptiveConcurrency.algorithm', 'FLOODGATE_INVALID_OPTION'],
    [
      { algorithm: 'gradient2', backoffRatio: 0.5 },
      'adaptiveConcurrency.backoffRatio',
      'FLOODGATE_UNKNOWN_OPTION',
    ],
    [
      { algorithm: 'aimd', smoothing: 0.5 },
      'adaptiveConcurrency.smoothing',
      'FLOODGATE_UNKNOWN_OPTION',
    ],
    [
      { algorithm: 'aimd', backoffRatio: 0.4 },
      'adaptiveConcurrency.backoffRatio',
      'FLOODGATE_INVALID_OPTION',
    ],
    [
      { algorithm: 'aimd', backoffRatio: 0.95001 },
      'adaptiveConcurrency.backoffRatio',
      'FLOODGATE_INVALID_OPTION',
    ],
    [{ algorithm: 'aimd', timeout: 0 }, 'adaptiveConcurrency.timeout', 'FLOODGATE_INVALID_OPTION'],
    [{ initialLimit: 10 }, 'adaptiveConcurrency.initialLimit', 'FLOODGATE_INVALID_OPTION'],
    [{ minLimit: 30, maxLimit: 25 }, 'adaptiveConcurrency.maxLimit', 'FLOODGATE_INVALID_OPTION'],
    [{ smoothing: 0 }, 'adaptiveConcurrency.smoothing', 'FLOODGATE_INVALID_OPTION'],
    [{ rttTolerance: 0.9 }, 'adaptiveConcurrency.rttTolerance', 'FLOODGATE_INVALID_OPTION'],
    [{ queueSize: -1 }, 'adaptiveConcurrency.queueSize', 'FLOODGATE_INVALID_OPTION'],
    [{ algorithm: 'vegas', random: 4 }, 'adaptiveConcurrency.random', 'FLOODGATE_INVALID_OPTION'],
    [
      { algorithm: 'vegas', probeMultiplier: 0 },
      'adaptiveConcurrency.probeMultiplier',
      'FLOODGATE_INVALID_OPTION',
    ],
    [{ criticalReserve: 0.95 }, 'adaptiveConcurrency.criticalReserve', 'FLOODGATE_INVALID_OPTION'],
    [
      { criticalReserve: 0.5, defaultReserve: 0.5 },
      'adaptiveConcurrency.defaultReserve',
      'FLOODGATE_INVALID_OPTION',
    ],
    [{ clock: () => Number.NaN }, 'adaptiveConcurrency.clock', 'FLOODGATE_INVALID_OPTION'],
    [
      { eventLoop: { sheddable: 2 } },
      'adaptiveConcurrency.eventLoop.sheddable',
      'FLOODGATE_INVALID_OPTION',
    ],
    [
      { eventLoop: { sheddable: 0.9, default: 0.8 } },
      'adaptiveConcurrency.eventLoop.default',
      'FLOODGATE_INVALID_OPTION',
    ],
    [
      { eventLoop: { every: '1s' } },
      'adaptiveConcurrency.eventLoop.every',
      'FLOODGATE_UNKNOWN_OPTION',
    ],
    [{ name: 'has space' }, 'adaptiveConcurrency.name', 'FLOODGATE_INVALID_OPTION'],
  ])('refuses %j at construction, naming %s', (options, field, code) => {
    const error = configErrorOf(() => adaptiveConcurrency(options as never));
    expect([error.field, error.code]).toEqual([field, code]);
  });
});
